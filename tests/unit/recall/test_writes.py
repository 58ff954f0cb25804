"""Waiting for write tokens: done once the segmenter's mark passes them, pending otherwise."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence

import pytest
from tests.unit.fakes import FakeTree

from memstream.domain.write_token import WritePosition
from memstream.recall.writes import LONGEST_PAUSE_S, WriteStatus, WriteWaiter


class Clock:
    """A monotonic clock that moves only when the waiter pauses; a pause may run `during`."""

    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []
        self.during: list[Callable[[], Awaitable[None]]] = []

    def monotonic(self) -> float:
        return self.now

    async def pause(self, seconds: float) -> None:
        await asyncio.sleep(0)  # as a real pause does, let others run (before time moves)
        self.pauses.append(seconds)
        self.now += seconds
        if self.during:
            await self.during.pop(0)()


def waiter(tree: FakeTree, clock: Clock) -> WriteWaiter:
    return WriteWaiter(tree, monotonic=clock.monotonic, pause=clock.pause)


def at(partition: int, offset: int) -> WritePosition:
    return WritePosition(partition, offset, issued_ms=0)


async def test_positions_already_passed_answer_without_waiting() -> None:
    tree, clock = FakeTree(), Clock()
    await tree.mark_progress({0: 8, 1: 3})
    status = await waiter(tree, clock).wait("ann", [at(0, 7), at(1, 2)], timeout_s=1)
    assert status == WriteStatus() and clock.pauses == []
    assert status.waited_ms == 0


async def test_the_wait_ends_when_the_mark_passes_the_offset() -> None:
    tree, clock = FakeTree(), Clock()
    await tree.mark_progress({0: 7})  # the record at 7 is not committed yet
    clock.during = [lambda: tree.mark_progress({}), lambda: tree.mark_progress({0: 8})]
    status = await waiter(tree, clock).wait("ann", [at(0, 7)], timeout_s=1)
    assert not status.pending and len(clock.pauses) == 2
    assert status.waited_ms == round(sum(clock.pauses) * 1000, 3)
    assert clock.pauses[1] == 2 * clock.pauses[0]  # the pause grows


async def test_a_mark_that_never_comes_answers_pending_at_the_deadline() -> None:
    tree, clock = FakeTree(), Clock()
    status = await waiter(tree, clock).wait("ann", [at(2, 0)], timeout_s=0.5)
    assert status == WriteStatus(True, "not_yet_processed", waited_ms=500.0)
    assert abs(sum(clock.pauses) - 0.5) < 1e-9 and max(clock.pauses) <= 0.05


async def test_a_message_held_for_its_reply_is_reported_with_its_id() -> None:
    tree, clock = FakeTree(), Clock()
    await tree.mark_progress({0: 1})
    tree.states["ann"] = json.dumps({"pending": [{"type": "turn.v1", "event_id": "q1"}]})
    status = await waiter(tree, clock).wait("ann", [at(0, 0)], timeout_s=1)
    assert status == WriteStatus(True, "awaiting_reply", held=("q1",))


async def test_a_turn_held_for_an_earlier_seq_is_reported_first_with_its_reason() -> None:
    tree, clock = FakeTree(), Clock()
    await tree.mark_progress({0: 2})
    held = {
        "pending": [{"type": "turn.v1", "event_id": "q1"}],
        "held": [{"type": "turn.v1", "event_id": "s1-5"}],
    }
    tree.states["ann"] = json.dumps(held)
    status = await waiter(tree, clock).wait("ann", [at(0, 1)], timeout_s=1)
    assert status == WriteStatus(True, "awaiting_earlier_seq", held=("s1-5", "q1"))


async def test_no_tokens_no_wait() -> None:
    tree, clock = FakeTree(), Clock()
    tree.states["ann"] = json.dumps({"pending": [{"type": "turn.v1", "event_id": "q1"}]})
    assert await waiter(tree, clock).wait("ann", [], timeout_s=1) == WriteStatus()


class CountingTree(FakeTree):
    """Counts the progress reads; fails them from the `fail_after`-th on, if set."""

    def __init__(self, fail_after: int | None = None) -> None:
        super().__init__()
        self.progress_reads = 0
        self.fail_after = fail_after

    async def progress(self, partitions: Sequence[int], topic: str | None = None) -> dict[int, int]:
        self.progress_reads += 1
        if self.fail_after is not None and self.progress_reads > self.fail_after:
            raise ConnectionError("redis went away")
        return await super().progress(partitions, topic)


async def nothing() -> None:
    return None


async def test_reads_that_wait_share_one_poll() -> None:
    tree, clock = CountingTree(), Clock()
    await tree.mark_progress({0: 0, 1: 0})
    shared = waiter(tree, clock)
    clock.during = [nothing, nothing, lambda: tree.mark_progress({0: 100, 1: 100})]
    readers = 50
    statuses = await asyncio.gather(
        *(shared.wait("ann", [at(n % 2, n)], timeout_s=1) for n in range(readers))
    )
    assert [s.pending for s in statuses] == [False] * readers
    # Each read checks once on its own, then all of them are polled together.
    assert tree.progress_reads == readers + len(clock.pauses) == readers + 3


async def test_each_read_waits_for_its_own_position_and_deadline() -> None:
    tree, clock = CountingTree(), Clock()
    await tree.mark_progress({0: 0})
    shared = waiter(tree, clock)
    clock.during = [lambda: tree.mark_progress({0: 5})]
    soon, never = await asyncio.gather(
        shared.wait("ann", [at(0, 4)], timeout_s=1),
        shared.wait("ann", [at(0, 9)], timeout_s=0.2),
    )
    assert not soon.pending and soon.waited_ms == round(clock.pauses[0] * 1000, 3)
    assert never == WriteStatus(True, "not_yet_processed", waited_ms=200.0)


async def test_a_failed_poll_reaches_every_read_waiting() -> None:
    tree, clock = CountingTree(fail_after=2), Clock()  # each read's own check succeeds
    shared = waiter(tree, clock)
    outcomes = await asyncio.gather(
        shared.wait("ann", [at(0, 1)], timeout_s=1),
        shared.wait("bob", [at(1, 1)], timeout_s=1),
        return_exceptions=True,
    )
    assert [type(o) for o in outcomes] == [ConnectionError, ConnectionError]
    tree.fail_after = None
    await tree.mark_progress({0: 2})
    assert not (await shared.wait("ann", [at(0, 1)], timeout_s=1)).pending  # polls again


async def test_a_read_cancelled_while_waiting_leaves_the_others_waiting() -> None:
    tree, clock = CountingTree(), Clock()
    shared = waiter(tree, clock)
    gone = asyncio.create_task(shared.wait("ann", [at(0, 1)], timeout_s=1))
    clock.during = [nothing, lambda: tree.mark_progress({0: 2})]
    staying = asyncio.create_task(shared.wait("bob", [at(0, 1)], timeout_s=1))
    await asyncio.sleep(0)  # both joined
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert not (await staying).pending


async def test_a_mark_announced_in_the_process_wakes_the_poll_before_its_pause_ends() -> None:
    tree = CountingTree()
    await tree.mark_progress({0: 0})
    pausing, never_ends = asyncio.Event(), asyncio.Event()

    async def long_pause(seconds: float) -> None:
        pausing.set()
        await never_ends.wait()  # only the announced mark can end this wait

    shared = WriteWaiter(tree, pause=long_pause)
    read = asyncio.create_task(shared.wait("ann", [at(0, 3)], timeout_s=60))
    await asyncio.wait_for(pausing.wait(), timeout=5)  # the read joined; the poll pauses
    await tree.mark_progress({0: 4})
    shared.progressed()
    status = await asyncio.wait_for(read, timeout=5)
    assert not status.pending and tree.progress_reads == 2


async def test_once_marks_are_announced_the_poll_is_a_fallback_at_the_longest_pause() -> None:
    tree, clock = CountingTree(), Clock()
    await tree.mark_progress({0: 0})
    shared = waiter(tree, clock)
    shared.progressed()  # an announcement with no read waiting: the next poll reads at once
    clock.during = [nothing, lambda: tree.mark_progress({0: 9})]
    status = await shared.wait("ann", [at(0, 5)], timeout_s=1)
    assert not status.pending
    assert clock.pauses == [LONGEST_PAUSE_S, LONGEST_PAUSE_S]
    assert tree.progress_reads == 1 + 3  # its own check, then a poll at once and two more


async def test_announced_marks_answer_the_reads_they_pass_without_reading_redis() -> None:
    tree = CountingTree()
    await tree.mark_progress({0: 0, 1: 0})
    pausing, never_ends = asyncio.Event(), asyncio.Event()

    async def long_pause(seconds: float) -> None:
        pausing.set()
        await never_ends.wait()  # only an announcement can answer the reads

    shared = WriteWaiter(tree, pause=long_pause)
    passed = asyncio.create_task(shared.wait("ann", [at(0, 3)], timeout_s=60))
    still = asyncio.create_task(shared.wait("bo", [at(1, 5)], timeout_s=60))
    await asyncio.wait_for(pausing.wait(), timeout=5)  # both joined; the poll pauses
    reads_before = tree.progress_reads
    shared.progressed({0: 4, 1: 5})  # passes offset 3 of partition 0, not offset 5 of 1
    status = await asyncio.wait_for(passed, timeout=5)
    assert not status.pending and tree.progress_reads == reads_before
    assert not still.done()
    shared.progressed({1: 6})
    assert not (await asyncio.wait_for(still, timeout=5)).pending
    assert tree.progress_reads == reads_before


async def test_a_read_of_partitions_marked_here_waits_for_the_announcement_not_redis() -> None:
    tree = CountingTree()
    shared = WriteWaiter(tree)
    shared.progressed({0: 10})
    done_already = await shared.wait("ann", [at(0, 9)], timeout_s=1)
    waiting = asyncio.create_task(shared.wait("ann", [at(0, 10)], timeout_s=60))
    await asyncio.sleep(0)
    shared.progressed({0: 11})
    status = await asyncio.wait_for(waiting, timeout=5)
    assert not done_already.pending and not status.pending
    assert tree.progress_reads == 0


async def test_a_partition_not_marked_here_is_still_read_from_redis() -> None:
    tree = CountingTree()
    await tree.mark_progress({1: 3})
    shared = WriteWaiter(tree)
    shared.progressed({0: 10})  # this process marks partition 0 only
    status = await shared.wait("ann", [at(0, 2), at(1, 2)], timeout_s=1)
    assert not status.pending and tree.progress_reads == 1


ACME = "memstream.turns.v1.acme"


def in_acme(partition: int, offset: int) -> WritePosition:
    return WritePosition(partition, offset, issued_ms=0, topic=ACME)


async def test_a_tenants_token_waits_on_its_topics_mark_not_the_shared_ones() -> None:
    tree, clock = FakeTree(), Clock()
    await tree.mark_progress({0: 100})  # the shared topic's partition 0 is far ahead
    await tree.mark_progress({0: 5}, topic=ACME)
    clock.during = [nothing, lambda: tree.mark_progress({0: 6}, topic=ACME)]
    status = await waiter(tree, clock).wait("acme:ann", [in_acme(0, 5)], timeout_s=1)
    assert not status.pending and len(clock.pauses) == 2


async def test_a_shared_token_is_not_passed_by_a_tenants_topic_moving_on() -> None:
    tree, clock = FakeTree(), Clock()
    await tree.mark_progress({0: 3})
    await tree.mark_progress({0: 100}, topic=ACME)
    status = await waiter(tree, clock).wait("ann", [at(0, 5)], timeout_s=0.2)
    assert status.pending and status.reason == "not_yet_processed"


async def test_announced_marks_pass_only_the_reads_of_their_topic() -> None:
    tree = CountingTree()
    pausing, never_ends = asyncio.Event(), asyncio.Event()

    async def long_pause(seconds: float) -> None:
        pausing.set()
        await never_ends.wait()  # only an announcement can answer the reads

    shared = WriteWaiter(tree, pause=long_pause)
    tenant = asyncio.create_task(shared.wait("acme:ann", [in_acme(2, 7)], timeout_s=60))
    plain = asyncio.create_task(shared.wait("bo", [at(2, 7)], timeout_s=60))
    await asyncio.wait_for(pausing.wait(), timeout=5)
    shared.progressed({2: 8})  # the shared topic's partition 2
    assert not (await asyncio.wait_for(plain, timeout=5)).pending
    assert not tenant.done()
    shared.progressed({2: 8}, ACME)
    assert not (await asyncio.wait_for(tenant, timeout=5)).pending


async def test_the_poll_reads_each_topic_waited_on() -> None:
    tree, clock = CountingTree(), Clock()
    shared = waiter(tree, clock)
    clock.during = [
        nothing,
        lambda: tree.mark_progress({1: 4}),
        lambda: tree.mark_progress({1: 4}, topic=ACME),
    ]
    both = await asyncio.gather(
        shared.wait("acme:ann", [in_acme(1, 3)], timeout_s=1),
        shared.wait("bo", [at(1, 3)], timeout_s=1),
    )
    assert [s.pending for s in both] == [False, False]
