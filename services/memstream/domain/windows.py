"""Window tracking as a reducer: a user's state and one event in, new state and outputs out.

The segmenter persists the state; this module decides, for each event, which L1 segments are
ready and which windows have closed. Only windows that have received children are tracked.

Rules (see DESIGN.md, "Temporal Memory Tree"):
- A session closes on `session_end`, on a turn of another session, or when the wall clock
  shows it idle: idleness is measured in processing time (when its last turn was *received*),
  so replaying old conversations does not close sessions under the producer's feet.
- A day, week or month closes once time passes its end and no open child belongs to it.
  Time is the user's newest event time (reason `watermark`) or the scheduler's wall clock
  minus a grace period (reason `clock`).
- A turn of a session that has already closed is late: it becomes an L1 segment of its own
  at once and every already-consolidated window above it closes again (reason `late_data`).
  With the reorder window on (`domain.reorder`), a turn whose `seq` is below one its session
  has already taken is late too, open session or not, and its session is cut into L1s again
  in `seq` order (`Resegment`, `domain.resegment`): the tree an in-order sender gets. One
  below the session's first `seq` also renames the session after its own time.
- One session is open per user at a time; a turn of an unknown session opens it.
- A session id names a session only while it is in use (`domain.incarnations`): a turn
  dated after its session's `session_end`, or at least the idle timeout after its last
  message (event time, so a replay decides the same), starts a new session under the same
  id, with an L2 of its own (its id names the new session's start). A session that crosses
  midnight stays under the day it started on.
- A turn of a session the state no longer remembers (evicted past the bounds below: older
  than every remembered session while the memory is full) is late data too: it gets its L1
  at once under an L2 of its own (the forgotten session's start is unknown, so the L2 window
  starts at the turn), and that L2 and every calendar window above it that is not open
  close again (reason `late_data`). It never touches the open session.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from memstream.domain.calendar import get_zone
from memstream.domain.count_groups import gathered_with_late, newest_written
from memstream.domain.frozen import replace
from memstream.domain.ids import window_node_id
from memstream.domain.incarnations import (
    SessionInfo,
    archived,
    earlier_session,
    starts_anew,
    updated,
)
from memstream.domain.models import (
    ClockTicked,
    ClosureReason,
    Level,
    MemoryNode,
    SessionEnded,
    Turn,
    Window,
    WindowClosed,
)
from memstream.domain.remembered import Remembered, RememberedChanges
from memstream.domain.window_chain import (
    OpenWindow,
    parent_node_id,
    remember_chain,
    session_chain,
    window_key,
    window_parts,
)

# Closed windows and sessions are remembered so late data can be recognised; the oldest are
# forgotten past these bounds. The store keeps them apart from the state's document and a
# step reads only those it asks for (`domain.remembered`).
MAX_REMEMBERED_SESSIONS = 512
MAX_REMEMBERED_CLOSED = 1024


@dataclass(frozen=True, slots=True)
class WindowRules:
    segment_messages: int = 2  # the most messages one segment holds
    segment_by_exchange: bool = True  # False: every `segment_messages` messages, whoever spoke
    session_idle: timedelta = timedelta(minutes=30)
    # The gap in event time after which a turn under a used session id starts a new session;
    # None: the idle timeout. Apart from it because the idle timeout is also how long the
    # clock waits, in wall time, to close a quiet session: a demo or a test that closes
    # sessions within seconds should not split its conversations into one turn each.
    session_gap: timedelta | None = None
    clock_grace: timedelta = timedelta(hours=1)
    default_tz: str = "UTC"
    # Turns a user's out-of-`seq`-order turns may be held for their gap (`domain.reorder`);
    # 0: every turn is taken as it arrives.
    reorder_turns: int = 0

    @property
    def reuse_gap(self) -> timedelta:
        return self.session_idle if self.session_gap is None else self.session_gap


@dataclass(frozen=True, slots=True)
class UserWindows:
    """Everything the reducer remembers about one user."""

    user_id: str
    tz: str
    watermark: datetime | None = None
    open_session: str | None = None
    pending: tuple[Turn, ...] = ()
    # Count mode: the open session's newest messages already in L1s, oldest first; a late
    # turn may take them back into `pending` (`domain.count_groups`).
    written_tail: tuple[Turn, ...] = ()
    sessions: dict[str, SessionInfo] = field(default_factory=dict)
    open_windows: dict[str, OpenWindow] = field(default_factory=dict)
    closed: tuple[str, ...] = ()
    # Earlier sessions under ids that were used again, newest last (`domain.incarnations`).
    earlier: tuple[SessionInfo, ...] = ()
    # Turns waiting for an earlier `seq` of their session, in arrival order (`domain.reorder`),
    # and when the newest of them arrived.
    held: tuple[Turn, ...] = ()
    held_at: datetime | None = None
    # The day, week and month windows opened so far, each with its zone, oldest first
    # (`domain.calendar_windows`): a zone change does not move them.
    calendar: tuple[Window, ...] = ()
    # Set when the closed sessions and window keys are remembered apart (`domain.remembered`):
    # `sessions` then holds the open session and those the step looked up or changed,
    # `closed` the keys the step closed, `evicted` the remembered sessions it forgot,
    # `unclosed` the keys no longer closed (a session renamed), and `closed_seq` numbers the
    # keys closed so far (the store keeps the newest).
    remembered: Remembered | None = None
    evicted: frozenset[str] = frozenset()
    unclosed: frozenset[str] = frozenset()
    closed_seq: int = 0


@dataclass(frozen=True, slots=True)
class SegmentReady:
    """Messages that make one L1 memory, with the id of their L2 parent."""

    messages: tuple[Turn, ...]
    parent_id: str
    late: bool = False


@dataclass(frozen=True, slots=True)
class Resegment:
    """A late turn of a session that has taken later ones: the session's L1s, stored under
    `parent_id`, are cut again with it in `seq` order, under `in_order_parent_id` (the same
    id unless the turn is the session's first, which names the session).

    In count mode, for the open session: `pending`, the messages the reducer was gathering
    (in no L1 yet), are cut with them, and `still_pending`, the ids of those it goes on
    gathering after the cut (`domain.count_groups`), are left out of the L1s."""

    turn: Turn
    parent_id: str
    in_order_parent_id: str
    pending: tuple[Turn, ...] = ()
    still_pending: frozenset[str] = frozenset()


Output = SegmentReady | Resegment | WindowClosed


def initial_state(user_id: str, tz: str) -> UserWindows:
    return UserWindows(user_id=user_id, tz=tz)


def apply(
    state: UserWindows,
    event: Turn | SessionEnded | ClockTicked,
    received_at: datetime,
    rules: WindowRules,
) -> tuple[UserWindows, list[Output]]:
    """The new state and what to do, for one event of this user."""
    if isinstance(event, Turn):
        return _on_turn(state, event, received_at, rules)
    if isinstance(event, SessionEnded):
        return _on_session_end(state, event, rules)
    return _on_tick(state, event, rules)


def next_due(state: UserWindows, rules: WindowRules) -> datetime | None:
    """The earliest wall-clock time at which a tick could close something for this user."""
    candidates: list[datetime] = []
    if state.open_session is not None:
        info = state.sessions[state.open_session]
        candidates.append(info.last_received + rules.session_idle)
    busy_parents = {ow.parent_key for ow in state.open_windows.values()}
    for key, ow in state.open_windows.items():
        if ow.window.level > Level.SESSION and key not in busy_parents:
            candidates.append(ow.window.end + rules.clock_grace)
    return min(candidates) if candidates else None


def _on_turn(
    state: UserWindows, turn: Turn, received_at: datetime, rules: WindowRules
) -> tuple[UserWindows, list[Output]]:
    tz = turn.tz or state.tz or rules.default_tz
    if tz != state.tz:  # (each `replace` copies the whole state: one per turn where it can)
        state = replace(state, tz=tz)
    if turn.tz is None:  # its L1 dates it on the calendar its windows use
        turn = replace(turn, tz=tz)
    known = known_session(state, turn.session_id)
    outputs: list[Output] = []
    if known is not None and starts_anew(known, turn, rules.reuse_gap):
        if not known.closed:  # its last message is the idle timeout behind this one
            state, outputs = _close_session(state, "idle", rules)
        state = replace(state, earlier=archived(state.earlier, state.sessions[turn.session_id]))
        known = None
    elif known is not None and (earlier := earlier_session(state.earlier, known, turn)):
        return _on_late_turn(state, turn, earlier, rules)
    elif known is not None and (known.closed or _out_of_order(known, turn, rules)):
        return _on_late_turn(state, turn, known, rules)
    if known is None and _forgotten(state, turn):
        return _on_forgotten_session_turn(state, turn, received_at)

    if state.open_session is not None and state.open_session != turn.session_id:
        state, closed = _close_session(state, "new_session", rules)
        outputs += closed
    if known is None:  # its start on the local clock, which its L2's title reads
        start = turn.ts.astimezone(get_zone(tz))
        known = SessionInfo(turn.session_id, start, turn.ts, received_at, tz=tz, first_seq=turn.seq)
        state = _open_session_windows(state, known)
    info = replace(
        known,
        last_ts=max(known.last_ts, turn.ts),
        last_received=received_at,
        next_seq=max(known.next_seq, turn.seq + 1),
    )
    state = _remember(state, info)
    pending = state.pending
    groups: list[tuple[Turn, ...]] = []
    if pending and turn.seq < pending[0].seq:
        # A message from before the waiting one, taken as it came (no reorder window): not
        # its reply (the session has gone past it), so an L1 of its own; the waiting one waits on.
        outputs.append(replace(_segment(state, (turn,)), late=True))
    else:
        groups, pending = gathered(pending, turn, rules)
    tail = state.written_tail
    if groups and not rules.segment_by_exchange:
        tail = newest_written(tail, groups, rules.segment_messages)
    state = replace(
        state,
        open_session=turn.session_id,
        pending=pending,
        written_tail=tail,
        watermark=turn.ts if state.watermark is None else max(state.watermark, turn.ts),
    )
    outputs += [_segment(state, group) for group in groups]
    state, closed = _close_due(state, state.watermark, "watermark")
    return state, outputs + closed


def gathered(
    pending: tuple[Turn, ...], turn: Turn, rules: WindowRules
) -> tuple[list[tuple[Turn, ...]], tuple[Turn, ...]]:
    """`turn`, the next message of its session, added to the segment being gathered: the
    segments that are complete now, and what is still gathered (the one pairing rule, for
    turns as they come and for a session cut again, `domain.resegment`)."""
    complete: list[tuple[Turn, ...]] = []
    if pending and not _continues(pending, turn, rules):
        complete.append(pending)
        pending = ()
    pending = (*pending, turn)
    if turn.flush or len(pending) >= rules.segment_messages or not _may_grow(pending, rules):
        complete.append(pending)
        pending = ()
    return complete, pending


def _continues(pending: tuple[Turn, ...], turn: Turn, rules: WindowRules) -> bool:
    """Whether `turn` belongs to the segment being gathered.

    By exchange, a segment is a user's message and the assistant's reply to it; in a
    conversation between people (role `other`) every message is an exchange of its own.
    """
    if not rules.segment_by_exchange:
        return True
    return pending[0].role == "user" and turn.role == "assistant"


def _may_grow(pending: tuple[Turn, ...], rules: WindowRules) -> bool:
    """Whether a later message could still join: only a user's message awaiting its reply."""
    return not rules.segment_by_exchange or pending[0].role == "user"


def _on_late_turn(
    state: UserWindows, turn: Turn, info: SessionInfo, rules: WindowRules
) -> tuple[UserWindows, list[Output]]:
    was = info
    # Count mode, its session open: the group the reducer gathers changes with it.
    regathers = (
        not rules.segment_by_exchange and state.sessions.get(state.open_session or "") == was
    )
    info = replace(
        info,
        last_ts=max(info.last_ts, turn.ts),
        next_seq=max(info.next_seq, turn.seq + 1),
        first_seq=None if info.first_seq is None else min(info.first_seq, turn.seq),
    )
    if _names_session(was, turn, rules):  # its first message: the session starts with it
        info = replace(info, start=turn.ts.astimezone(get_zone(info.tz or state.tz)))
    if state.sessions.get(info.session_id, was).start == was.start:
        state = _remember(state, info)
    else:  # a turn of an earlier session under a reused id
        state = replace(state, earlier=updated(state.earlier, info, was.start))
    parent_id = _node_id(state, Level.SESSION, info.start, info.session_id)
    outputs: list[Output] = []
    if info.start != was.start:
        state, outputs = _renamed(state, was, info)
    if _out_of_order(was, turn, rules):
        stored_under = _node_id(state, Level.SESSION, was.start, was.session_id)
        cut = Resegment(turn, stored_under, parent_id)
        if regathers:
            size = rules.segment_messages
            still, tail = gathered_with_late(state.pending, state.written_tail, turn, size)
            cut = replace(
                cut, pending=state.pending, still_pending=frozenset(t.event_id for t in still)
            )
            state = replace(state, pending=still, written_tail=tail)
        outputs.insert(0, cut)
    else:
        outputs.insert(0, SegmentReady((turn,), parent_id, True))
    closing = {o.node_id for o in outputs if isinstance(o, WindowClosed)}
    outputs += [c for c in _chain_closures(state, info) if c.node_id not in closing]
    return state, outputs


def _chain_closures(state: UserWindows, info: SessionInfo) -> list[WindowClosed]:
    """The closures that consolidate again the session `info` (a late turn's) and every
    window above it that has closed."""
    session_key = window_key(Level.SESSION, info.start, info.session_id)
    closures: list[WindowClosed] = []
    for ow in _chain_windows(state, info):
        key = window_key(*window_parts(ow.window))
        if key in state.open_windows:
            break  # this window and those above it will be consolidated in due course
        if key == session_key or _was_closed(state, key):
            closures.append(WindowClosed(ow.window, "late_data", ow.node_id, _parent_id(state, ow)))
    return closures


def _out_of_order(info: SessionInfo, turn: Turn, rules: WindowRules) -> bool:
    """Whether `turn` comes after a later `seq` of its session was taken: with the reorder
    window on, and only for a session that knows its `seq`s (saved since they were kept)."""
    return rules.reorder_turns > 0 and info.first_seq is not None and turn.seq < info.next_seq


def _names_session(info: SessionInfo, turn: Turn, rules: WindowRules) -> bool:
    """Whether `turn`, come late, is its session's first message in `seq` order."""
    return _out_of_order(info, turn, rules) and turn.seq < (info.first_seq or 0)


def _renamed(
    state: UserWindows, was: SessionInfo, info: SessionInfo
) -> tuple[UserWindows, list[Output]]:
    """The session `was`, now starting at `info.start`: tracked under its new key (open, its
    windows opened for the new start; closed, remembered as closed), and, if it had closed,
    the closures that empty its old L2 (the consolidator removes a node left childless) and
    consolidate again the closed windows above it (another day's, if the start moved back
    past midnight)."""
    old_key = window_key(Level.SESSION, was.start, was.session_id)
    new_key = window_key(Level.SESSION, info.start, info.session_id)
    if old_key in state.open_windows:
        rest = {k: v for k, v in state.open_windows.items() if k != old_key}
        return _open_session_windows(replace(state, open_windows=rest), info), []
    emptied: list[Output] = [*_chain_closures(state, was)]
    if state.remembered is None:
        closed = tuple(new_key if k == old_key else k for k in state.closed)
        if new_key not in closed:
            closed = (*closed, new_key)[-MAX_REMEMBERED_CLOSED:]
        state = replace(state, closed=closed)
    else:  # apart: the old key is closed no more, the new one is (last in closing order)
        closed = tuple(k for k in _remember_closed(state, new_key) if k != old_key)
        state = replace(state, closed=closed, unclosed=state.unclosed | {old_key})
    return _remember_calendar(state, _chain_windows(state, info)), emptied


def _forgotten(state: UserWindows, turn: Turn) -> bool:
    """Whether `turn`'s unknown session is one the state may have forgotten: the memory is
    full and the turn is older than every session it still holds."""
    if _remembered_count(state) < MAX_REMEMBERED_SESSIONS:
        return False
    times = [s.last_ts for s in state.sessions.values()]
    if (stored := _oldest_apart(state)) is not None:
        times.append(stored[1])
    return turn.ts < min(times)


def _on_forgotten_session_turn(
    state: UserWindows, turn: Turn, received_at: datetime
) -> tuple[UserWindows, list[Output]]:
    info = SessionInfo(turn.session_id, turn.ts, turn.ts, received_at, closed=True, tz=state.tz)
    outputs: list[Output] = [
        SegmentReady((turn,), _node_id(state, Level.SESSION, info.start, info.session_id), True)
    ]
    chain = _chain_windows(state, info)
    for ow in chain:
        if window_key(*window_parts(ow.window)) in state.open_windows:
            break  # this window and those above it will be consolidated in due course
        outputs.append(WindowClosed(ow.window, "late_data", ow.node_id, _parent_id(state, ow)))
    return _remember_calendar(state, chain), outputs


def _on_session_end(
    state: UserWindows, event: SessionEnded, rules: WindowRules
) -> tuple[UserWindows, list[Output]]:
    if state.open_session != event.session_id:
        return state, []  # unknown or already closed: nothing more to do
    info = state.sessions[event.session_id]
    ended = replace(info, ended=max(event.ts, info.last_ts))
    state = _remember(state, ended)
    state, outputs = _close_session(state, "session_end", rules)
    ts = event.ts if state.watermark is None else max(state.watermark, event.ts)
    state = replace(state, watermark=ts)
    state, closed = _close_due(state, state.watermark, "watermark")
    return state, outputs + closed


def _on_tick(
    state: UserWindows, tick: ClockTicked, rules: WindowRules
) -> tuple[UserWindows, list[Output]]:
    outputs: list[Output] = []
    if state.open_session is not None:
        info = state.sessions[state.open_session]
        if tick.now - info.last_received >= rules.session_idle:
            state, outputs = _close_session(state, "idle", rules)
    state, closed = _close_due(state, tick.now - rules.clock_grace, "clock")
    return state, outputs + closed


def _close_session(
    state: UserWindows, reason: ClosureReason, rules: WindowRules
) -> tuple[UserWindows, list[Output]]:
    assert state.open_session is not None
    info = state.sessions[state.open_session]
    outputs: list[Output] = []
    if state.pending:
        outputs.append(_segment(state, state.pending))
    key = window_key(Level.SESSION, info.start, info.session_id)
    ow = state.open_windows[key]
    window = replace(ow.window, end=info.last_ts)
    if _was_closed(state, key):
        reason = "late_data"
    outputs.append(WindowClosed(window, reason, ow.node_id, _parent_id(state, ow)))
    open_windows = {k: v for k, v in state.open_windows.items() if k != key}
    state = _remember(state, replace(info, closed=True))
    state = replace(
        state,
        open_session=None,
        pending=(),
        written_tail=(),
        open_windows=open_windows,
        closed=_remember_closed(state, key),
    )
    return state, outputs


def _close_due(
    state: UserWindows, now: datetime | None, reason: ClosureReason
) -> tuple[UserWindows, list[Output]]:
    """Close every calendar window that time has passed and whose children are all closed."""
    if now is None or not any(
        ow.window.level > Level.SESSION and ow.window.end <= now
        for ow in state.open_windows.values()
    ):
        return state, []  # the usual case, after every turn: one pass says so
    outputs: list[Output] = []
    for level in (Level.DAY, Level.WEEK, Level.MONTH):
        busy_parents = {ow.parent_key for ow in state.open_windows.values()}
        due = sorted(
            (
                (key, ow)
                for key, ow in state.open_windows.items()
                if ow.window.level == level and ow.window.end <= now and key not in busy_parents
            ),
            key=lambda item: item[1].window.start,
        )
        for key, ow in due:
            was_closed = _was_closed(state, key)
            closure_reason: ClosureReason = "late_data" if was_closed else reason
            outputs.append(
                WindowClosed(ow.window, closure_reason, ow.node_id, _parent_id(state, ow))
            )
            state = replace(
                state,
                open_windows={k: v for k, v in state.open_windows.items() if k != key},
                closed=_remember_closed(state, key),
            )
    return state, outputs


def _open_session_windows(state: UserWindows, info: SessionInfo) -> UserWindows:
    """Track the new session and every calendar window above it (an open one may have grown:
    `domain.calendar_windows`)."""
    open_windows = dict(state.open_windows)
    chain = _chain_windows(state, info)
    for ow in chain:
        key = window_key(*window_parts(ow.window))
        if open_windows.get(key, ow) == ow and key in open_windows:
            break
        open_windows[key] = ow
    return _remember_calendar(replace(state, open_windows=open_windows), chain)


def _chain_windows(state: UserWindows, info: SessionInfo) -> list[OpenWindow]:
    return session_chain(state.user_id, state.tz, state.calendar, info)


def _parent_id(state: UserWindows, ow: OpenWindow) -> str | None:
    return parent_node_id(state.user_id, ow)


def _remember_calendar(state: UserWindows, chain: list[OpenWindow]) -> UserWindows:
    calendar = remember_chain(state.calendar, chain)
    return state if calendar is state.calendar else replace(state, calendar=calendar)


def _node_id(state: UserWindows, level: Level, start: datetime, session_id: str | None) -> str:
    return window_node_id(state.user_id, level, start, session_id)


def _segment(state: UserWindows, messages: tuple[Turn, ...]) -> SegmentReady:
    info = state.sessions[messages[0].session_id]
    return SegmentReady(messages, _node_id(state, Level.SESSION, info.start, info.session_id))


def known_session(state: UserWindows, session_id: str) -> SessionInfo | None:
    """The session the state remembers under `session_id`, if any."""
    if (info := state.sessions.get(session_id)) is not None:
        return info
    rem = state.remembered
    if rem is not None and session_id not in state.evicted and session_id not in rem.sessions:
        rem.questions.sessions.add(session_id)  # taken as unknown until it is looked up
    return None  # (one found by a lookup is in `sessions` unless evicted since)


def _was_closed(state: UserWindows, key: str) -> bool:
    if key in state.closed:
        return True
    rem = state.remembered
    if rem is None or key in state.unclosed:
        return False
    if key not in rem.closed:  # taken as not closed until it is looked up
        rem.questions.closed.add(key)
        return False
    return rem.closed[key]


def _remembered_count(state: UserWindows) -> int:
    """How many sessions the state remembers, the open one included."""
    rem = state.remembered
    if rem is None:
        return len(state.sessions)
    known_apart = sum(rem.held(s) for s in {*state.sessions, *state.evicted})
    return len(state.sessions) + rem.count - known_apart


def _oldest_apart(state: UserWindows) -> tuple[str, datetime] | None:
    """The oldest session remembered apart that the step has not loaded or evicted (by last
    message time, then id)."""
    rem = state.remembered
    if rem is None:
        return None
    for sid, last_ts in rem.oldest:
        if sid not in state.sessions and sid not in state.evicted:
            return sid, last_ts
    if not rem.complete():  # taken as none left until more are read
        rem.questions.oldest = max(rem.questions.oldest, 2 * len(rem.oldest) + 4)
    return None


def _remember(state: UserWindows, info: SessionInfo) -> UserWindows:
    """`state` with `info` remembered (never itself evicted: it is in use) and the oldest
    closed sessions forgotten past the bound; an open session is never dropped either, its
    windows need it. The oldest is the one with the earliest last message, then the least id."""
    sessions = {k: v for k, v in state.sessions.items() if k != info.session_id}
    sessions[info.session_id] = info
    state = replace(state, sessions=sessions)
    while _remembered_count(state) > MAX_REMEMBERED_SESSIONS:
        evictable = [
            (s.last_ts, s.session_id)
            for s in state.sessions.values()
            if s.closed and s.session_id != info.session_id
        ]
        if (apart := _oldest_apart(state)) is not None:
            evictable.append((apart[1], apart[0]))
        if not evictable:
            break
        _, oldest = min(evictable)
        state = replace(
            state,
            sessions={k: v for k, v in state.sessions.items() if k != oldest},
            evicted=state.evicted | {oldest} if state.remembered is not None else state.evicted,
        )
    return state


def _remember_closed(state: UserWindows, key: str) -> tuple[str, ...]:
    kept = (*(k for k in state.closed if k != key), key)
    # Apart, the store keeps the newest keys once the step is committed.
    return kept if state.remembered is not None else kept[-MAX_REMEMBERED_CLOSED:]


def with_remembered(state: UserWindows, remembered: Remembered) -> UserWindows:
    """`state` reading its closed sessions and window keys apart, with what a step has read
    of them. A state that still holds them (written before the split) keeps them: its
    commit moves them out."""
    found = {s.session_id: s for s in remembered.sessions.values() if s is not None}
    return replace(state, remembered=remembered, sessions={**found, **state.sessions})


def apart(state: UserWindows) -> tuple[UserWindows, RememberedChanges]:
    """The state a commit writes as its document (the open session, no closed keys) and
    what it writes of the remembered sessions and keys beside it."""
    rem = state.remembered
    if rem is None:
        return state, RememberedChanges()
    closed_now = tuple(s for s in state.sessions.values() if s.closed)
    written = {s.session_id for s in closed_now}
    reopened = {sid for sid, s in state.sessions.items() if not s.closed and rem.held(sid)}
    changes = RememberedChanges(
        sessions=closed_now,
        dropped=tuple(sorted((state.evicted | reopened) - written)),
        closed=tuple((key, state.closed_seq + n) for n, key in enumerate(state.closed, 1)),
        unclosed=tuple(sorted(state.unclosed - set(state.closed))),
    )
    document = replace(
        state,
        sessions={sid: s for sid, s in state.sessions.items() if not s.closed},
        closed=(),
        remembered=None,
        evicted=frozenset(),
        unclosed=frozenset(),
        closed_seq=state.closed_seq + len(state.closed),
    )
    return document, changes


def bottom_up(nodes: Iterable[MemoryNode]) -> list[MemoryNode]:
    """Lower levels first, then by time: every window after the windows below it."""
    return sorted(nodes, key=lambda n: (n.level, n.t_start, n.id))


def late_data_closures(nodes: Iterable[MemoryNode]) -> list[WindowClosed]:
    """The closures that consolidate these stored windows again, bottom-up (a forget or a
    rebuild changed what lies below them), each in the zone it was opened in."""
    return [
        WindowClosed(
            Window(n.user_id, n.level, n.t_start, n.t_end, n.session_id, n.tz),
            "late_data",
            n.id,
            n.parent_id,
        )
        for n in bottom_up(nodes)
        if n.level != Level.SEGMENT
    ]
