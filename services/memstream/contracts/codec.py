"""Wire and storage formats: JSON dicts to domain objects and back.

Validation against the topic schemas happens before decoding; the decoders here assume a
schema-valid value and only convert types.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any, Literal

from memstream.domain.derivation import Derivation
from memstream.domain.incarnations import SessionInfo
from memstream.domain.models import (
    ClockTicked,
    Fact,
    ForgetRequested,
    InputEvent,
    Level,
    MemoryNode,
    RebuildRequested,
    SessionEnded,
    SourceMessage,
    Turn,
    Window,
    WindowClosed,
)
from memstream.domain.window_chain import OpenWindow, window_key
from memstream.domain.windows import UserWindows

# The next `seq` of a session saved before sessions kept one: above any real `seq`, so no
# turn of it waits for an earlier one (a reused id counting from 0 still starts anew).
UNKNOWN_NEXT_SEQ = 2**62
# A window state's calendar (up to 81 windows at its bound: `domain.calendar_windows`) is
# decoded and encoded whole at every step, while a window in it changes a few times a day:
# rows met before are taken from here, so a user with a long history pays for a step what a
# new one does. Windows are immutable, so sharing one between states is safe; past the bound
# the tables start again (the next steps fill them).
CALENDAR_TABLE_MAX = 1 << 14
_CalendarRow = tuple[str, int, str, str, str | None]
_calendar_windows: dict[_CalendarRow, Window] = {}
# By the window's id, beside the window itself: held here, its id names no other object.
_calendar_rows: dict[int, tuple[Window, list[Any]]] = {}
TURN_TYPE = "turn.v1"
RemovalReason = Literal["forget", "replaced"]
REBUILD_TYPE = "rebuild.v1"


def parse_ts(value: str) -> datetime:
    ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if ts.tzinfo is None:
        raise ValueError(f"timestamp {value!r} has no UTC offset")
    return ts


def decode_input(value: dict[str, Any]) -> InputEvent:
    kind = value["type"]
    if kind == TURN_TYPE:
        return Turn(
            event_id=value["event_id"],
            user_id=value["user_id"],
            session_id=value["session_id"],
            seq=int(value["seq"]),
            speaker=value["speaker"],
            role=value["role"],
            text=value["text"],
            ts=parse_ts(value["ts"]),
            tz=value.get("tz"),
            metadata=value.get("metadata") or {},
            expires_at=parse_ts(value["expires_at"]) if value.get("expires_at") else None,
            flush=value.get("flush") is True,
        )
    if kind == "session_end.v1":
        return SessionEnded(value["user_id"], value["session_id"], parse_ts(value["ts"]))
    if kind == "forget.v1":
        return ForgetRequested(value["user_id"], tuple(value.get("message_ids") or ()))
    if kind == "tick.v1":
        return ClockTicked(value["user_id"], parse_ts(value["now"]))
    if kind == REBUILD_TYPE:
        since = value.get("from")
        levels = value.get("levels")
        return RebuildRequested(
            value["user_id"],
            value["rebuild_id"],
            datetime.fromisoformat(since).replace(tzinfo=UTC) if since else None,
            tuple(sorted(Level(int(n)) for n in levels)) if levels else tuple(Level),
        )
    raise ValueError(f"unknown event type {kind!r}")


def encode_turn(turn: Turn) -> dict[str, Any]:
    value: dict[str, Any] = {
        "type": TURN_TYPE,
        "event_id": turn.event_id,
        "user_id": turn.user_id,
        "session_id": turn.session_id,
        "seq": turn.seq,
        "speaker": turn.speaker,
        "role": turn.role,
        "text": turn.text,
        "ts": turn.ts.isoformat(),
    }
    if turn.tz:
        value["tz"] = turn.tz
    if turn.metadata:
        value["metadata"] = turn.metadata
    if turn.expires_at is not None:
        value["expires_at"] = turn.expires_at.isoformat()
    if turn.flush:
        value["flush"] = True
    return value


def encode_tick(user_id: str, now: datetime) -> dict[str, Any]:
    return {"type": "tick.v1", "user_id": user_id, "now": now.isoformat()}


def encode_forget(user_id: str, message_ids: Sequence[str] = ()) -> dict[str, Any]:
    value: dict[str, Any] = {"type": "forget.v1", "user_id": user_id}
    if message_ids:
        value["message_ids"] = list(dict.fromkeys(message_ids))
    return value


def encode_rebuild(
    user_id: str,
    rebuild_id: str,
    since: date | None = None,
    levels: Sequence[int] | None = None,
) -> dict[str, Any]:
    """A `rebuild.v1` value; `since` (a date, UTC) and `levels` only when they narrow it."""
    value: dict[str, Any] = {"type": REBUILD_TYPE, "user_id": user_id, "rebuild_id": rebuild_id}
    if since is not None:
        value["from"] = since.isoformat()
    if levels is not None and set(levels) != {int(level) for level in Level}:
        value["levels"] = sorted({int(n) for n in levels})
    return value


def encode_window(closure: WindowClosed) -> dict[str, Any]:
    w = closure.window
    return {
        "type": "window.v1",
        "user_id": w.user_id,
        "level": int(w.level),
        "window_start": w.start.isoformat(),
        "window_end": w.end.isoformat(),
        "session_id": w.session_id,
        "reason": closure.reason,
        "node_id": closure.node_id,
        "parent_id": closure.parent_id,
        **({"tz": w.tz} if w.tz else {}),
    }


def decode_window(value: dict[str, Any]) -> WindowClosed:
    window = Window(
        user_id=value["user_id"],
        level=Level(int(value["level"])),
        start=parse_ts(value["window_start"]),
        end=parse_ts(value["window_end"]),
        session_id=value.get("session_id"),
        tz=value.get("tz"),
    )
    return WindowClosed(window, value["reason"], value["node_id"], value.get("parent_id"))


def encode_node(node: MemoryNode) -> dict[str, Any]:
    value = {
        **_announced(node),
        "children": list(node.children),
        "messages": [encode_source_message(m) for m in node.messages],
        "facts": encode_facts(node.facts),
        "derivation": node.derivation.to_json() if node.derivation else None,
    }
    if node.tz is not None:
        value["tz"] = node.tz
    return value


def _announced(node: MemoryNode) -> dict[str, Any]:
    """The fields the memories topic announces; the stores keep the rest too."""
    return {
        "id": node.id,
        "user_id": node.user_id,
        "level": int(node.level),
        "t_start": node.t_start.isoformat(),
        "t_end": node.t_end.isoformat(),
        "text": node.text,
        "parent_id": node.parent_id,
        "source_ids": list(node.source_ids),
        "version": node.version,
        "degraded": node.degraded,
        "session_id": node.session_id,
        "speakers": list(node.speakers),
    }


def encode_source_message(message: SourceMessage) -> dict[str, Any]:
    value: dict[str, Any] = {
        "event_id": message.event_id,
        "speaker": message.speaker,
        "role": message.role,
        "text": message.text,
        "ts": message.ts.isoformat(),
        "caption": message.caption,
    }
    if message.seq is not None:
        value["seq"] = message.seq
    if message.tz is not None:
        value["tz"] = message.tz
    if message.flush:
        value["flush"] = True
    return value


def decode_source_message(value: dict[str, Any]) -> SourceMessage:
    return SourceMessage(
        event_id=value["event_id"],
        speaker=value["speaker"],
        role=value.get("role", "other"),
        text=value["text"],
        ts=parse_ts(value["ts"]),
        caption=value.get("caption"),
        seq=int(value["seq"]) if value.get("seq") is not None else None,
        tz=value.get("tz"),
        flush=value.get("flush") is True,
    )


def encode_facts(facts: Sequence[Fact]) -> list[dict[str, Any]]:
    return [
        {
            "text": f.text,
            "source_ids": list(f.source_ids),
            "at": f.at.isoformat() if f.at else None,
        }
        for f in facts
    ]


def decode_facts(raw: Any) -> tuple[Fact, ...]:
    return tuple(
        Fact(
            f["text"],
            tuple(f.get("source_ids", ())),
            parse_ts(f["at"]) if f.get("at") else None,
        )
        for f in raw or ()
    )


def decode_node(value: dict[str, Any]) -> MemoryNode:
    return MemoryNode(
        id=value["id"],
        user_id=value["user_id"],
        level=Level(int(value["level"])),
        t_start=parse_ts(value["t_start"]),
        t_end=parse_ts(value["t_end"]),
        text=value["text"],
        parent_id=value.get("parent_id"),
        children=tuple(value.get("children", ())),
        source_ids=tuple(value.get("source_ids", ())),
        version=int(value.get("version", 1)),
        degraded=bool(value.get("degraded", False)),
        session_id=value.get("session_id"),
        speakers=tuple(value.get("speakers", ())),
        messages=tuple(decode_source_message(m) for m in value.get("messages") or ()),
        facts=decode_facts(value.get("facts")),
        derivation=decode_derivation(value.get("derivation")),
        tz=value.get("tz"),
    )


def decode_derivation(raw: Any) -> Derivation | None:
    return Derivation.from_json(raw) if isinstance(raw, dict) else None


def memory_event(node: MemoryNode) -> dict[str, Any]:
    """The change feed announces a node with what wrote it and the facts of its text; its
    children and verbatim messages stay in the stores (the feed carries no message twice)."""
    return {
        "type": "memory.v1",
        **_announced(node),
        "derivation": node.derivation.to_json() if node.derivation else None,
        "facts": encode_facts(node.facts),
    }


def removed_event(
    user_id: str, node_ids: Sequence[str], reason: RemovalReason = "forget"
) -> dict[str, Any]:
    """A `memory_removed.v1` value: these nodes were removed by a forget of messages, or
    `replaced` by others holding their messages (a late turn's session cut again)."""
    return {
        "type": "memory_removed.v1",
        "user_id": user_id,
        "ids": list(node_ids),
        "reason": reason,
    }


def encode_state(state: UserWindows) -> dict[str, Any]:
    return {
        "user_id": state.user_id,
        "tz": state.tz,
        "watermark": state.watermark.isoformat() if state.watermark else None,
        "open_session": state.open_session,
        "pending": [encode_turn(t) for t in state.pending],
        "written_tail": [encode_turn(t) for t in state.written_tail],
        "sessions": [encode_session(s) for s in state.sessions.values()],
        "open_windows": {
            key: {
                "level": int(ow.window.level),
                "start": ow.window.start.isoformat(),
                "end": ow.window.end.isoformat(),
                "session_id": ow.window.session_id,
                "node_id": ow.node_id,
                "parent_key": ow.parent_key,
                "tz": ow.window.tz,
            }
            for key, ow in state.open_windows.items()
        },
        "calendar": [_calendar_row(w) for w in state.calendar],
        "closed": list(state.closed),
        "earlier": [encode_session(s) for s in state.earlier],
        "held": [encode_turn(t) for t in state.held],
        "held_at": state.held_at.isoformat() if state.held_at else None,
        "closed_seq": state.closed_seq,
    }


def encode_session(s: SessionInfo) -> list[Any]:
    return [
        s.session_id,
        s.start.isoformat(),
        s.last_ts.isoformat(),
        s.last_received.isoformat(),
        s.closed,
        s.next_seq,
        s.ended.isoformat() if s.ended else None,
        s.tz,
        s.first_seq,
    ]


def decode_session(row: Sequence[Any]) -> SessionInfo:
    """A session as `encode_session` wrote it. A state written before a session kept its
    next `seq` and end has five fields: the `seq` it has reached is unknown, so the session
    goes on taking its turns as they come (`UNKNOWN_NEXT_SEQ`: nothing is held for it, where
    0 would hold every later turn waiting for a `seq` 0 it already took); its end is None.
    One written before a session kept its zone has seven: its L2 reads the user's zone; one
    written before it kept its first `seq` has eight: no late turn renames it."""
    sid, start, last, received, closed, *rest = row
    missing = (UNKNOWN_NEXT_SEQ, None, None, None)[len(rest) :]
    next_seq, ended, tz, first_seq = (*rest, *missing)[:4]
    return SessionInfo(
        sid,
        parse_ts(start),
        parse_ts(last),
        parse_ts(received),
        closed,
        int(next_seq),
        parse_ts(ended) if ended else None,
        tz,
        None if first_seq is None else int(first_seq),
    )


def decode_state(value: dict[str, Any]) -> UserWindows:
    user_id = value["user_id"]
    sessions = {s.session_id: s for s in map(decode_session, value["sessions"])}
    open_windows = {
        _session_key(key, w, sessions): OpenWindow(
            Window(
                user_id,
                Level(w["level"]),
                parse_ts(w["start"]),
                parse_ts(w["end"]),
                w["session_id"],
                w.get("tz") or value["tz"],
            ),
            w["node_id"],
            w["parent_key"],
        )
        for key, w in value["open_windows"].items()
    }
    pending = _turns(value["pending"])
    return UserWindows(
        user_id=user_id,
        tz=value["tz"],
        watermark=parse_ts(value["watermark"]) if value["watermark"] else None,
        open_session=value["open_session"],
        pending=pending,
        sessions=sessions,
        open_windows=open_windows,
        closed=tuple(_session_key(k, None, sessions) for k in value["closed"]),
        earlier=tuple(map(decode_session, value.get("earlier", ()))),
        # (A state written before the tail was kept has none: `domain.count_groups`.)
        written_tail=_turns(value.get("written_tail", ())),
        held=_turns(value.get("held", ())),
        held_at=parse_ts(value["held_at"]) if value.get("held_at") else None,
        calendar=_decode_calendar(value, open_windows.values()),
        closed_seq=value.get("closed_seq", 0),
    )


def _turns(values: Iterable[dict[str, Any]]) -> tuple[Turn, ...]:
    return tuple(t for t in map(decode_input, values) if isinstance(t, Turn))


def _decode_calendar(
    value: dict[str, Any], open_windows: Iterable[OpenWindow]
) -> tuple[Window, ...]:
    """The remembered calendar windows. A state written before they were kept has its open
    ones only, in the state's zone: later windows are computed as they were then."""
    if "calendar" not in value:
        return tuple(ow.window for ow in open_windows if ow.window.level > Level.SESSION)
    user_id = value["user_id"]
    return tuple(
        _calendar_window(user_id, level, start, end, tz)
        for level, start, end, tz in value["calendar"]
    )


def _calendar_window(user_id: str, level: int, start: str, end: str, tz: str | None) -> Window:
    """A calendar row as a window, decoded once (`CALENDAR_TABLE_MAX`)."""
    window = _calendar_windows.get((user_id, level, start, end, tz))
    if window is None:
        window = Window(user_id, Level(level), parse_ts(start), parse_ts(end), None, tz)
        _hold_calendar(window, [level, start, end, tz])
    return window


def _calendar_row(window: Window) -> list[Any]:
    """A calendar window as its row, encoded once (`CALENDAR_TABLE_MAX`)."""
    held = _calendar_rows.get(id(window))
    if held is not None and held[0] is window:
        return held[1]
    row = [int(window.level), window.start.isoformat(), window.end.isoformat(), window.tz]
    _hold_calendar(window, row)
    return row


def _hold_calendar(window: Window, row: list[Any]) -> None:
    """Both ways: a row a commit writes is the row the next step's load reads."""
    if len(_calendar_rows) >= CALENDAR_TABLE_MAX or len(_calendar_windows) >= CALENDAR_TABLE_MAX:
        _calendar_rows.clear()
        _calendar_windows.clear()
    _calendar_rows[id(window)] = (window, row)
    _calendar_windows[(window.user_id, *row)] = window


def _session_key(
    key: str, window: Mapping[str, Any] | None, sessions: Mapping[str, SessionInfo]
) -> str:
    """A window key as `window_key` writes it now. A state written before a session's key
    held its start names a session `2|<id>`: such a key gets the start of its window, or,
    in the closed list, of the session its id names."""
    if window is not None:
        if window["level"] != int(Level.SESSION):
            return key
        return window_key(Level.SESSION, parse_ts(window["start"]), window["session_id"])
    info = sessions.get(key[2:]) if key.startswith("2|") else None
    return key if info is None else window_key(Level.SESSION, info.start, info.session_id)
