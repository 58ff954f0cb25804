"""The clock ticker over in-memory fakes: ticks for due users, degraded nodes re-queued."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from tests.unit.fakes import FakePublisher, FakeTree

from memstream.contracts.codec import decode_input, decode_window
from memstream.domain.models import ClockTicked, Level, MemoryNode, StoredNode
from memstream.ports import UserCommit
from memstream.scheduler.clock import ClockTicker

NOW = datetime(2024, 5, 6, 12, 0, tzinfo=UTC)
T0 = NOW - timedelta(days=1)


def ticker(
    tree: FakeTree,
    publisher: FakePublisher,
    retry_degraded: bool = True,
    clock: Callable[[], datetime] = lambda: NOW,
) -> ClockTicker:
    return ClockTicker(
        tree=tree,
        publisher=publisher,
        turns_topic="turns",
        windows_topic="windows",
        retry_degraded=retry_degraded,
        clock=clock,
    )


async def due(tree: FakeTree, user: str, at: datetime) -> None:
    await tree.commit_user(UserCommit(user, state={}, seen={}, nodes=[], outbox=[], due=at))


def node(node_id: str, level: Level, degraded: bool) -> MemoryNode:
    return MemoryNode(
        id=node_id,
        user_id="ana",
        level=level,
        t_start=T0,
        t_end=T0 + timedelta(hours=1),
        text="offline text",
        parent_id="parent-" + node_id,
        degraded=degraded,
        session_id="s1" if level == Level.SESSION else None,
    )


async def test_a_tick_goes_to_each_user_whose_due_time_has_passed() -> None:
    tree, publisher = FakeTree(), FakePublisher()
    await due(tree, "early", NOW - timedelta(hours=1))
    await due(tree, "now", NOW)
    await due(tree, "later", NOW + timedelta(seconds=1))
    assert await ticker(tree, publisher).tick_due_users() == 2
    assert [(o.topic, o.key) for o in publisher.sent] == [("turns", "early"), ("turns", "now")]
    assert [decode_input(o.value) for o in publisher.sent] == [
        ClockTicked("early", NOW),
        ClockTicked("now", NOW),
    ]


async def test_nothing_due_publishes_nothing() -> None:
    tree, publisher = FakeTree(), FakePublisher()
    await due(tree, "later", NOW + timedelta(hours=1))
    assert await ticker(tree, publisher).tick_due_users() == 0
    assert publisher.sent == []


async def test_degraded_summaries_are_queued_again_and_degraded_l1s_are_not() -> None:
    tree, publisher = FakeTree(), FakePublisher()
    session = node("session", Level.SESSION, degraded=True)
    nodes = [session, node("leaf", Level.SEGMENT, True), node("day", Level.DAY, False)]
    await tree.commit_nodes("ana", [StoredNode(n, "fp") for n in nodes], outbox=[])
    assert await ticker(tree, publisher).reconsolidate_degraded() == 1
    [sent] = publisher.sent
    assert (sent.topic, sent.key) == ("windows", "ana")
    closure = decode_window(sent.value)
    assert (closure.node_id, closure.parent_id, closure.reason) == (
        "session",
        "parent-session",
        "clock",
    )
    window = closure.window
    assert (window.level, window.start, window.end, window.session_id) == (
        Level.SESSION,
        session.t_start,
        session.t_end,
        "s1",
    )


async def test_without_an_llm_to_retry_with_nothing_is_queued() -> None:
    tree, publisher = FakeTree(), FakePublisher()
    session = node("session", Level.SESSION, degraded=True)
    await tree.commit_nodes("ana", [StoredNode(session, "fp")], outbox=[])
    assert await ticker(tree, publisher, retry_degraded=False).reconsolidate_degraded() == 0
    assert publisher.sent == []


async def test_one_run_ticks_and_retries() -> None:
    tree, publisher = FakeTree(), FakePublisher()
    await due(tree, "ana", NOW)
    session = node("session", Level.SESSION, degraded=True)
    await tree.commit_nodes("ana", [StoredNode(session, "fp")], outbox=[])
    await ticker(tree, publisher).run_once()
    assert sorted(o.topic for o in publisher.sent) == ["turns", "windows"]


class IndexingTree(FakeTree):
    """Counts the clock's asks to index the degraded nodes by user; the first ones fail."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.asked, self.failures = 0, failures

    async def index_degraded_by_user(self) -> int:
        self.asked += 1
        if self.asked <= self.failures:
            raise ConnectionError("redis went away")
        return 3


async def test_the_first_run_indexes_the_degraded_nodes_by_user_once() -> None:
    tree, publisher = IndexingTree(failures=0), FakePublisher()
    clock = ticker(tree, publisher)
    for _ in range(3):
        await clock.run_once()
    assert tree.asked == 1


async def test_a_failed_indexing_holds_up_no_tick_and_is_tried_again() -> None:
    tree, publisher = IndexingTree(failures=1), FakePublisher()
    await due(tree, "ana", NOW)
    clock = ticker(tree, publisher)
    with pytest.raises(ConnectionError):
        await clock.run_once()
    assert [o.topic for o in publisher.sent] == ["turns"]  # the tick went out first
    await clock.run_once()
    await clock.run_once()
    assert tree.asked == 2


async def test_a_node_that_stays_degraded_is_queued_again_ever_less_often() -> None:
    tree, publisher = FakeTree(), FakePublisher()
    session = node("session", Level.SESSION, degraded=True)
    await tree.commit_nodes("ana", [StoredNode(session, "fp")], outbox=[])
    now = [NOW]
    clock = ticker(tree, publisher, clock=lambda: now[0])
    queued = []
    # Ticks every 30 s: at once, then after 1, 2, 4, 8, 16 and 32 minutes, then every hour.
    for tick in range(260):
        now[0] = NOW + timedelta(seconds=30 * tick)
        if await clock.reconsolidate_degraded():
            queued.append(tick // 2)
    assert queued == [0, 1, 3, 7, 15, 31, 63, 123]
    # Written again by the LLM, then degraded again: queued at once, its count afresh.
    await tree.commit_nodes("ana", [StoredNode(node("session", Level.SESSION, False), "fp")], [])
    assert await clock.reconsolidate_degraded() == 0
    await tree.commit_nodes("ana", [StoredNode(session, "fp")], outbox=[])
    assert await clock.reconsolidate_degraded() == 1
