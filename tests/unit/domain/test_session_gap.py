"""A session id is reused after a gap in event time, which is not the wall-clock idle timeout
when a deployment shortens the latter (the demo closes quiet sessions within seconds)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memstream.domain.models import Turn
from memstream.domain.windows import Output, SegmentReady, WindowRules, apply, initial_state

RECEIVED = datetime(2030, 1, 1, tzinfo=UTC)
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def turn(seq: int, minute: int) -> Turn:
    role = "user" if seq % 2 == 0 else "assistant"
    at = T0 + timedelta(minutes=minute)
    return Turn(f"s1-{seq}", "u1", "s1", seq, role, role, f"m{seq}", at)  # type: ignore[arg-type]


def sessions_of(rules: WindowRules, turns: list[Turn]) -> list[tuple[tuple[str, ...], str]]:
    state = initial_state("u1", "UTC")
    outputs: list[Output] = []
    for t in turns:
        state, out = apply(state, t, RECEIVED, rules)
        outputs += out
    return [
        (tuple(m.event_id for m in o.messages), o.parent_id)
        for o in outputs
        if isinstance(o, SegmentReady)
    ]


TURNS = [turn(0, 0), turn(1, 1), turn(2, 2), turn(3, 3)]  # a minute apart


def test_a_short_idle_timeout_with_a_longer_gap_keeps_one_session_and_its_exchanges() -> None:
    rules = WindowRules(session_idle=timedelta(seconds=2), session_gap=timedelta(minutes=30))
    found = sessions_of(rules, TURNS)
    assert [ids for ids, _ in found] == [("s1-0", "s1-1"), ("s1-2", "s1-3")]
    assert len({parent for _, parent in found}) == 1


def test_without_a_gap_the_idle_timeout_decides_and_each_turn_starts_anew() -> None:
    rules = WindowRules(session_idle=timedelta(seconds=2))
    found = sessions_of(rules, TURNS)
    assert len({parent for _, parent in found}) == len(found) > 2
