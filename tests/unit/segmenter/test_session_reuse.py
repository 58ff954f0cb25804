"""One session id used for days (an MCP server's one id per process, an app's one id per
user): each conversation after the idle timeout, or after its `session_end`, is a session of
its own under the right day; within the timeout it goes on. Through the real segmenter and
consolidator handlers over the fakes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from tests.unit.segmenter.session_rig import handler_rig, minutes, turn_at

from memstream.domain.ids import window_node_id
from memstream.domain.models import InputEvent, Level, MemoryNode, SessionEnded
from memstream.domain.windows import WindowRules

USER = "ana"
SESSION = "mcp-5f1c0a9e2b7d"  # one id for the life of the process
DAYS = [datetime(2026, 10, d, 9, 0, tzinfo=UTC) for d in (19, 20, 21)]
RULES = WindowRules(reorder_turns=32)


def three_days(*, end_each_day: bool, seq_restarts: bool) -> list[InputEvent]:
    """Two exchanges a day for three days under one id: 12 turns."""
    events: list[InputEvent] = []
    for day, start in enumerate(DAYS):
        for i in range(4):
            seq = i if seq_restarts else day * 4 + i
            events.append(turn_at(USER, SESSION, seq, start + minutes(i), f"day {day} turn {i}"))
        if end_each_day:
            events.append(SessionEnded(USER, SESSION, start + minutes(4)))
    return events


def by_level(nodes: dict[str, MemoryNode], level: Level) -> list[MemoryNode]:
    return sorted((n for n in nodes.values() if n.level == level), key=lambda n: n.t_start)


@pytest.mark.parametrize(
    ("end_each_day", "seq_restarts"), [(False, False), (True, False), (True, True)]
)
async def test_one_id_over_three_days_gives_three_sessions_under_three_days(
    end_each_day: bool, seq_restarts: bool
) -> None:
    rig = handler_rig(RULES)
    await rig.send_in_batches(three_days(end_each_day=end_each_day, seq_restarts=seq_restarts), [5])
    nodes = rig.nodes(USER)
    leaves, sessions, days = (
        by_level(nodes, lv) for lv in (Level.SEGMENT, Level.SESSION, Level.DAY)
    )
    assert [len(leaf.source_ids) for leaf in leaves] == [2] * 6  # six exchanges, none split
    assert [d.t_start.day for d in days] == [19, 20, 21]
    assert [s.id for s in sessions] == [
        window_node_id(USER, Level.SESSION, start, SESSION) for start in DAYS
    ]
    for session, day in zip(sessions, days, strict=True):
        assert session.parent_id == day.id
        assert session.t_start.date() == session.t_end.date() == day.t_start.date()
        assert [n.parent_id for n in leaves if n.t_start.date() == day.t_start.date()] == [
            session.id
        ] * 2
    assert {n.version for n in [*leaves, *sessions, *days]} == {1}  # written once each


async def test_within_the_idle_timeout_the_id_goes_on_naming_one_session() -> None:
    rig = handler_rig(RULES)
    start = DAYS[0]
    gap = RULES.session_idle - timedelta(minutes=1)
    events = [turn_at(USER, SESSION, i, start + i * gap, f"turn {i}") for i in range(4)]
    await rig.send_in_batches(events, [1])
    sessions = by_level(rig.nodes(USER), Level.SESSION)
    assert [(s.t_start, s.t_end) for s in sessions] == [(start, start + 3 * gap)]


async def test_a_late_turn_of_an_earlier_session_joins_that_session() -> None:
    """A turn dated inside the first day's session, arriving after the id moved on, is late
    data of the first day's session, not of the session now open under the id."""
    rig = handler_rig(RULES)
    events = three_days(end_each_day=False, seq_restarts=False)
    late = turn_at(USER, SESSION, 3, DAYS[0] + minutes(3.5), "an afterthought")
    await rig.send_in_batches([*events[:10], late, *events[10:]], [4])
    nodes = rig.nodes(USER)
    first = window_node_id(USER, Level.SESSION, DAYS[0], SESSION)
    [leaf] = [
        n for n in nodes.values() if n.level == Level.SEGMENT and late.event_id in n.source_ids
    ]
    assert leaf.parent_id == first
    assert len(by_level(nodes, Level.SESSION)) == 3
