"""The reorder window: a session's turns reach the window reducer in `seq` order, held in
the state (bounded by a count) while an earlier one is missing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.contracts.codec import decode_state, encode_state
from memstream.domain.models import ClockTicked, SessionEnded, Turn, WindowClosed
from memstream.domain.reorder import apply_in_order, held_due
from memstream.domain.windows import (
    Output,
    Resegment,
    SegmentReady,
    UserWindows,
    WindowRules,
    initial_state,
)

RULES = WindowRules(reorder_turns=4)
RECEIVED = datetime(2030, 1, 1, tzinfo=UTC)
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def turn(session: str, seq: int, minute: float | None = None) -> Turn:
    role = "user" if seq % 2 == 0 else "assistant"
    at = T0 + timedelta(minutes=seq if minute is None else minute)
    return Turn(f"{session}-{seq}", "u1", session, seq, role, role, f"m{seq}", at)  # type: ignore[arg-type]


def run(
    events: list[Turn | SessionEnded | ClockTicked],
    rules: WindowRules = RULES,
    state: UserWindows | None = None,
) -> tuple[UserWindows, list[Output]]:
    state = state or initial_state("u1", "UTC")
    outputs: list[Output] = []
    for event in events:
        state, out = apply_in_order(state, event, RECEIVED, rules)
        outputs += out
    return state, outputs


def segments(outputs: list[Output]) -> list[tuple[tuple[str, ...], str]]:
    return [
        (tuple(m.event_id for m in o.messages), o.parent_id)
        for o in outputs
        if isinstance(o, SegmentReady)
    ]


def test_a_reply_before_its_question_waits_for_it_and_pairs_with_it() -> None:
    state, out = run([turn("s1", 1)])
    assert segments(out) == [] and [t.event_id for t in state.held] == ["s1-1"]
    state, out = run([turn("s1", 0)], state=state)
    assert [ids for ids, _ in segments(out)] == [("s1-0", "s1-1")]
    assert state.held == () and state.held_at is None


def test_the_session_is_named_by_its_first_seq_not_its_first_arrival() -> None:
    _, in_order = run([turn("s1", 0), turn("s1", 1), turn("s1", 2), turn("s1", 3)])
    _, shuffled = run([turn("s1", 2), turn("s1", 3), turn("s1", 1), turn("s1", 0)])
    assert segments(shuffled) == segments(in_order)


def test_past_the_bound_the_session_goes_on_from_its_lowest_held_seq() -> None:
    waiting = [turn("s1", seq) for seq in (2, 3, 4, 5)]  # 0 and 1 never come
    state, out = run(waiting)
    assert segments(out) == [] and len(state.held) == RULES.reorder_turns
    state, out = run([turn("s1", 6)], state=state)
    assert [ids for ids, _ in segments(out)] == [("s1-2", "s1-3"), ("s1-4", "s1-5")]
    assert [t.event_id for t in state.pending] == ["s1-6"] and state.held == ()


def test_a_session_end_takes_its_held_turns_first() -> None:
    state, _ = run([turn("s1", 0), turn("s1", 1), turn("s1", 3)])
    state, out = run([SessionEnded("u1", "s1", T0 + timedelta(minutes=5))], state=state)
    assert [ids for ids, _ in segments(out)] == [("s1-3",)]
    assert state.held == () and state.open_session is None


def test_held_turns_are_due_for_a_tick_which_takes_them() -> None:
    state, _ = run([turn("s1", 0), turn("s1", 1), turn("s1", 3)])
    assert held_due(state, RULES) == RECEIVED + RULES.session_idle
    tick = ClockTicked("u1", RECEIVED + RULES.session_idle)
    state, out = run([tick], state=state)
    assert [ids for ids, _ in segments(out)] == [("s1-3",)]
    assert state.held == () and state.open_session is None  # idle once they are in


def test_a_late_turn_of_a_closed_session_is_never_held() -> None:
    """Dated inside its closed session, with a `seq` past its end: late data, at once."""
    end = SessionEnded("u1", "s1", T0 + timedelta(minutes=2))
    state, _ = run([turn("s1", 0), turn("s1", 1), end])
    state, out = run([turn("s1", 999, minute=0.5)], state=state)
    assert state.held == ()
    [late] = [o for o in out if isinstance(o, SegmentReady)]
    assert late.late and [m.event_id for m in late.messages] == ["s1-999"]


def test_a_reused_id_counting_again_from_0_is_held_for_its_0() -> None:
    end = SessionEnded("u1", "s1", T0 + timedelta(minutes=2))
    state, _ = run([turn("s1", 0), turn("s1", 1), turn("s1", 2), end])
    day = 24 * 60
    reply, question = turn("s1", 1, minute=day + 1), turn("s1", 0, minute=day)
    reply, question = (
        Turn(f"next-{t.seq}", "u1", "s1", t.seq, t.speaker, t.role, t.text, t.ts)
        for t in (reply, question)
    )
    state, out = run([reply], state=state)
    assert segments(out) == [] and state.held == (reply,)
    state, out = run([question], state=state)
    assert [ids for ids, _ in segments(out)] == [("next-0", "next-1")]
    assert state.sessions["s1"].start == question.ts and len(state.earlier) == 1


def test_without_a_window_turns_are_taken_as_they_come() -> None:
    _, out = run([turn("s1", 1), turn("s1", 0)], rules=WindowRules())
    assert [ids for ids, _ in segments(out)] == [("s1-1",)]  # the question waits for a reply


def test_held_turns_and_reused_sessions_survive_the_state_codec() -> None:
    state, _ = run(
        [
            turn("s1", 0),
            turn("s1", 1),
            SessionEnded("u1", "s1", T0 + timedelta(minutes=2)),
            turn("s1", 2, minute=24 * 60),  # the next day: a new session under s1
            turn("s1", 4, minute=24 * 60 + 2),
        ]
    )
    assert len(state.earlier) == 1 and state.held
    assert decode_state(encode_state(state)) == state


def test_a_state_written_before_sessions_could_be_reused_reads_as_now() -> None:
    state, _ = run(
        [turn("s1", 0), turn("s1", 1), SessionEnded("u1", "s1", T0 + timedelta(minutes=2))]
    )
    state, _ = run([turn("s2", 0, minute=60)], state=state)
    old = encode_state(state)
    for row in old["sessions"]:
        del row[5:]
    old["closed"] = [k.rsplit("|", 1)[0] if k.startswith("2|") else k for k in old["closed"]]
    old["open_windows"] = {
        (k.rsplit("|", 1)[0] if k.startswith("2|") else k): w
        for k, w in old["open_windows"].items()
    }
    for name in ("earlier", "held", "held_at"):
        del old[name]
    read = decode_state(old)
    assert read.closed == state.closed and read.open_windows == state.open_windows
    assert {sid: s.start for sid, s in read.sessions.items()} == {
        sid: s.start for sid, s in state.sessions.items()
    }
    # The open session's reached `seq` was not saved: its next turns are taken as they
    # come, never held waiting for a `seq` it took before the upgrade.
    went_on, out = run([turn("s2", 1, minute=61), turn("s2", 2, minute=62)], state=read)
    assert not went_on.held and ("s2-0", "s2-1") in [ids for ids, _ in segments(out)]


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 9), min_size=1, max_size=3),
    shifts=st.lists(st.floats(0, 4), min_size=30, max_size=30),
)
def test_any_shuffle_within_the_window_gives_the_in_order_segments(
    lengths: list[int], shifts: list[float]
) -> None:
    """Sessions one after another, each with its turns moved by fewer places than the
    window holds: the same segments, under the same session ids, in the same order."""
    in_order: list[Turn | SessionEnded | ClockTicked] = []
    shuffled: list[Turn | SessionEnded | ClockTicked] = []
    for n, length in enumerate(lengths):
        start = n * 60.0
        turns = [turn(f"s{n}", seq, start + seq) for seq in range(length)]
        moved = sorted(range(length), key=lambda i: i + shifts[(n * 9 + i) % len(shifts)])
        end = SessionEnded("u1", f"s{n}", T0 + timedelta(minutes=start + length))
        in_order += [*turns, end]
        shuffled += [*(turns[i] for i in moved), end]
    _, want = run(in_order)
    _, got = run(shuffled)
    assert segments(got) == segments(want)


def test_a_message_later_than_the_window_has_its_session_cut_again() -> None:
    """The window lets the session go past a missing reply; when it comes, the question
    waiting now is not the one it answers: the session's written L1s are cut again with it
    (the handler's part), and the question waits on."""
    rules = WindowRules(reorder_turns=1)
    state, out = run([turn("s1", 0), turn("s1", 2), turn("s1", 3), turn("s1", 4)], rules)
    assert [ids for ids, _ in segments(out)] == [("s1-0",), ("s1-2", "s1-3")]
    assert [t.event_id for t in state.pending] == ["s1-4"]
    state, out = run([turn("s1", 1)], rules, state)
    [late] = [o for o in out if isinstance(o, Resegment)]
    assert segments(out) == [] and late.turn.event_id == "s1-1"
    assert late.parent_id == late.in_order_parent_id  # seq 0 named the session already
    assert [t.event_id for t in state.pending] == ["s1-4"]


def test_a_first_message_later_than_the_window_renames_its_session() -> None:
    """The session went on from `seq` 1; its `seq` 0 then names it, as in order."""
    rules = WindowRules(reorder_turns=1)
    _, in_order = run([turn("s1", 0), turn("s1", 1)], rules)
    state, out = run([turn("s1", 1), turn("s1", 2), turn("s1", 3)], rules)
    assert state.sessions["s1"].start == T0 + timedelta(minutes=1)
    state, out = run([turn("s1", 0)], rules, state)
    [late] = [o for o in out if isinstance(o, Resegment)]
    assert late.parent_id != late.in_order_parent_id
    assert late.in_order_parent_id == segments(in_order)[0][1]
    assert state.sessions["s1"].start == T0 and state.sessions["s1"].first_seq == 0
    state, out = run([SessionEnded("u1", "s1", T0 + timedelta(minutes=9))], rules, state)
    [closed] = [o for o in out if isinstance(o, WindowClosed) and o.window.level == 2]
    assert closed.node_id == late.in_order_parent_id
