"""Waiting for write tokens: done once the segmenter's mark passes them, pending otherwise."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from tests.unit.fakes import FakeTree

from memstream.domain.write_token import WritePosition
from memstream.recall.writes import WriteStatus, WriteWaiter


class Clock:
    """A monotonic clock that moves only when the waiter pauses; a pause may run `during`."""

    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []
        self.during: list[Callable[[], Awaitable[None]]] = []

    def monotonic(self) -> float:
        return self.now

    async def pause(self, seconds: float) -> None:
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


async def test_no_tokens_no_wait() -> None:
    tree, clock = FakeTree(), Clock()
    tree.states["ann"] = json.dumps({"pending": [{"type": "turn.v1", "event_id": "q1"}]})
    assert await waiter(tree, clock).wait("ann", [], timeout_s=1) == WriteStatus()
