"""The window reducer: segments, closures and their order, late data, the wall clock."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from memstream.contracts.codec import decode_state, encode_state
from memstream.domain.models import ClockTicked, Level, SessionEnded, Turn, WindowClosed
from memstream.domain.windows import (
    SegmentReady,
    UserWindows,
    WindowRules,
    apply,
    initial_state,
    next_due,
)

RULES = WindowRules(segment_messages=2, session_idle=timedelta(minutes=30))
RECEIVED = datetime(2030, 1, 1, tzinfo=UTC)


def turn(session: str, seq: int, ts: datetime, tz: str = "UTC") -> Turn:
    return Turn(
        event_id=f"{session}-{seq}",
        user_id="u1",
        session_id=session,
        seq=seq,
        speaker="Ana" if seq % 2 == 0 else "Mira",
        role="user" if seq % 2 == 0 else "assistant",
        text=f"message {seq}",
        ts=ts,
        tz=tz,
    )


def run(state: UserWindows, events: list[object], received: datetime = RECEIVED):
    outputs: list[object] = []
    for event in events:
        state, out = apply(state, event, received, RULES)  # type: ignore[arg-type]
        # Every state survives a round trip through its storage format.
        state = decode_state(encode_state(state))
        outputs += out
    return state, outputs


def closures(outputs: list[object]) -> list[tuple[int, str]]:
    return [(int(o.window.level), o.reason) for o in outputs if isinstance(o, WindowClosed)]


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2025, 1, day, hour, minute, tzinfo=UTC)


def test_segments_are_exchanges_and_session_end_flushes_the_rest() -> None:
    events = [turn("s1", i, at(6, 10, i)) for i in range(5)]
    state, out = run(initial_state("u1", "UTC"), [*events, SessionEnded("u1", "s1", at(6, 10, 5))])
    segments = [o for o in out if isinstance(o, SegmentReady)]
    assert [len(s.messages) for s in segments] == [2, 2, 1]
    assert closures(out) == [(2, "session_end")]
    assert state.open_session is None


def test_day_waits_for_a_session_that_runs_past_midnight() -> None:
    late_evening = [turn("s1", 0, at(6, 23, 50)), turn("s1", 1, at(7, 0, 10))]
    state, out = run(initial_state("u1", "UTC"), late_evening)
    assert closures(out) == []  # day 6 is past, but its session is still open
    state, out = run(state, [SessionEnded("u1", "s1", at(7, 0, 11))])
    assert closures(out) == [(2, "session_end"), (3, "watermark")]


def test_new_session_closes_the_old_one_then_calendar_windows_in_level_order() -> None:
    # 2025-01-31 is a Friday; the following Monday is 3 February: day, week (starting
    # 27 January) and month (January) all close when the user's time passes them.
    first = [turn("s1", 0, datetime(2025, 1, 31, 9, tzinfo=UTC))]
    state, _ = run(initial_state("u1", "UTC"), first)
    _, out = run(state, [turn("s2", 0, datetime(2025, 2, 3, 9, tzinfo=UTC))])
    assert closures(out) == [
        (2, "new_session"),
        (3, "watermark"),
        (4, "watermark"),
        (5, "watermark"),
    ]


def test_week_straddling_months_keeps_january_open_until_the_week_closes() -> None:
    start = datetime(2025, 1, 27, 9, tzinfo=UTC)  # Monday; its week ends 3 February
    state, _ = run(initial_state("u1", "UTC"), [turn("s1", 0, start)])
    _, out = run(state, [turn("s2", 0, datetime(2025, 2, 1, 9, tzinfo=UTC))])
    assert (5, "watermark") not in closures(out)  # the January week is still open
    assert (3, "watermark") in closures(out)


def test_late_turn_gets_a_segment_and_reconsolidates_its_closed_windows() -> None:
    s1 = [turn("s1", 0, at(6, 10)), SessionEnded("u1", "s1", at(6, 10, 1))]
    s2 = [turn("s2", 0, at(8, 10))]  # closes day 6
    state, _ = run(initial_state("u1", "UTC"), [*s1, *s2])
    # Dated before s1's end: late data of s1 (dated after it, it would start a new session)
    _, out = run(state, [turn("s1", 7, at(6, 10) + timedelta(seconds=30))])
    segments = [o for o in out if isinstance(o, SegmentReady)]
    assert len(segments) == 1 and segments[0].late
    # session and day re-close; the week (6-12 January) never closed, so it is not re-queued
    assert closures(out) == [(2, "late_data"), (3, "late_data")]


def test_wall_clock_closes_idle_sessions_and_due_windows() -> None:
    state, _ = run(initial_state("u1", "UTC"), [turn("s1", 0, at(6, 10))])
    due = next_due(state, RULES)
    assert due == RECEIVED + RULES.session_idle
    state, out = run(state, [ClockTicked("u1", RECEIVED + timedelta(minutes=10))])
    assert closures(out) == []
    state, out = run(state, [ClockTicked("u1", RECEIVED + timedelta(minutes=31))])
    # Event times are in 2025, the clock in 2030: everything above the session is due too.
    assert closures(out) == [(2, "idle"), (3, "clock"), (4, "clock"), (5, "clock")]
    assert next_due(state, RULES) is None


def test_parent_ids_chain_from_session_to_month() -> None:
    _, out = run(
        initial_state("u1", "Asia/Tokyo"),
        [
            turn("s1", 0, at(6, 10), tz="Asia/Tokyo"),
            ClockTicked("u1", RECEIVED + timedelta(days=1)),
        ],
    )
    closed = [o for o in out if isinstance(o, WindowClosed)]
    by_level = {o.window.level: o for o in closed}
    for level in (Level.SESSION, Level.DAY, Level.WEEK):
        assert by_level[level].parent_id == by_level[Level(level + 1)].node_id
    assert by_level[Level.MONTH].parent_id is None
    day = by_level[Level.DAY].window
    assert day.start.utcoffset() == timedelta(hours=9)  # calendar windows in the user's zone


def test_by_exchange_a_user_message_and_its_reply_form_one_segment() -> None:
    t0 = at(6, 10)

    def msg(seq: int, role: str) -> Turn:
        return replace(turn("s1", seq, t0 + timedelta(minutes=seq)), role=role)  # type: ignore[arg-type]

    roles = ["user", "user", "assistant", "assistant", "other", "user", "assistant"]
    _, out = run(initial_state("u1", "UTC"), [msg(i, r) for i, r in enumerate(roles)])
    segments = [[m.seq for m in o.messages] for o in out if isinstance(o, SegmentReady)]
    # An unanswered user message stands alone; so do an assistant message with no question
    # before it and every message between people (role other).
    assert segments == [[0], [1, 2], [3], [4], [5, 6]]


def test_a_flushed_user_message_is_a_segment_at_once_and_its_reply_one_of_its_own() -> None:
    t0 = at(6, 10)
    asked = replace(turn("s1", 0, t0), flush=True)
    state, out = run(initial_state("u1", "UTC"), [asked])
    assert [[m.seq for m in o.messages] for o in out if isinstance(o, SegmentReady)] == [[0]]
    assert state.pending == ()
    _, out = run(state, [turn("s1", 1, t0 + timedelta(minutes=1))])
    assert [[m.seq for m in o.messages] for o in out if isinstance(o, SegmentReady)] == [[1]]


def test_by_count_segments_take_every_n_messages_whoever_speaks() -> None:
    rules = WindowRules(segment_messages=2, segment_by_exchange=False)
    state = initial_state("u1", "UTC")
    outputs: list[object] = []
    for i in range(5):
        state, out = apply(
            state, replace(turn("s1", i, at(6, 10, i)), role="other"), RECEIVED, rules
        )
        outputs += out
    segments = [[m.seq for m in o.messages] for o in outputs if isinstance(o, SegmentReady)]
    assert segments == [[0, 1], [2, 3]]


def test_a_turn_of_a_session_evicted_from_the_state_still_gets_its_l1_as_late_data() -> None:
    # Regression: past MAX_REMEMBERED_SESSIONS a turn of an early session raised KeyError.
    from memstream.domain.windows import MAX_REMEMBERED_SESSIONS

    start = datetime(2024, 1, 1, tzinfo=UTC)
    state = initial_state("u1", "UTC")
    for i in range(MAX_REMEMBERED_SESSIONS + 5):
        state, _ = apply(state, turn(f"s{i}", 0, start + timedelta(hours=i)), RECEIVED, RULES)
    assert "s0" not in state.sessions and len(state.sessions) == MAX_REMEMBERED_SESSIONS
    open_before = state.open_session

    old = replace(turn("s0", 1, start + timedelta(minutes=5)), role="other")
    state, out = run(state, [old])
    [segment] = [o for o in out if isinstance(o, SegmentReady)]
    assert segment.messages == (old,) and segment.late
    # Its own L2 and the closed calendar windows above it close again, as late data; the
    # month is still open (later sessions are in it), so it waits as usual.
    assert closures(out) == [(2, "late_data"), (3, "late_data"), (4, "late_data")]
    session_closure = next(o for o in out if isinstance(o, WindowClosed))
    assert session_closure.node_id == segment.parent_id
    assert state.open_session == open_before  # the live session is left alone

    # The user goes on: a new session still works after the late one.
    later = start + timedelta(hours=MAX_REMEMBERED_SESSIONS + 10)
    new = [turn("new", 0, later), turn("new", 1, later)]
    state, out = run(state, new)
    assert [o for o in out if isinstance(o, SegmentReady)][-1].messages == tuple(new)
    assert state.open_session == "new"
