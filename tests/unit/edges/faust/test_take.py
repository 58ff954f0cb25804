"""When a batch goes: once the records stop coming, when full, or `within` after its first.

Driven by a simulated clock and arrival schedule (the waiting logic only; the Faust plumbing
around it runs in the write-path and embedded-stack integration tests).
"""

from __future__ import annotations

import asyncio

from memstream.edges.faust.take import Gathering, gather_until_idle

WITHIN = 0.25
IDLE = 0.05


class Arrivals:
    """Records arriving at given times into a `Gathering`, on a clock that moves only when
    the code under test waits."""

    def __init__(self, schedule: list[tuple[float, int]], max_: int = 4096) -> None:
        self.schedule = sorted(schedule)
        self.now = 0.0
        self.gathering = Gathering(max_, lambda: self.now)
        self.stop_at: float | None = None

    def _land(self, count: int) -> None:
        for _ in range(count):
            if self.gathering.full.is_set():
                return  # the adder waits for the batch to be taken
            self.gathering.add(object())

    def advance(self, until: float, event: asyncio.Event | None = None) -> None:
        while self.schedule and self.schedule[0][0] <= until:
            if event is not None and event.is_set():
                return
            at, count = self.schedule.pop(0)
            self.now = max(self.now, at)
            self._land(count)
        if event is None or not event.is_set():
            self.now = max(self.now, until)

    async def wait(self, event: asyncio.Event, seconds: float) -> bool:
        self.advance(self.now + seconds, event)
        return self.stop_at is not None and self.now >= self.stop_at

    async def gather(self) -> float:
        await gather_until_idle(
            self.gathering, self.wait, within=WITHIN, idle_s=IDLE, clock=lambda: self.now
        )
        return self.now


async def test_a_fetched_backlog_goes_once_it_stops_coming_not_after_within() -> None:
    # 800 records reach the stream over 20 ms (a few fetches), then nothing.
    source = Arrivals([(1.0, 300), (1.01, 300), (1.02, 200)])
    went_at = await source.gather()
    assert len(source.gathering.events) == 800
    assert went_at == 1.02 + IDLE < 1.0 + WITHIN


async def test_a_batch_gathered_while_the_last_one_was_handled_goes_at_once() -> None:
    source = Arrivals([(1.0, 300), (1.01, 200)])
    source.advance(3.0)  # the caller handled the previous batch until then
    assert await source.gather() == 3.0
    assert len(source.gathering.take()) == 500


async def test_a_steady_trickle_goes_within_of_its_first_record() -> None:
    source = Arrivals([(2.0 + 0.02 * i, 1) for i in range(100)])
    went_at = await source.gather()
    assert went_at == 2.0 + WITHIN
    assert len(source.gathering.events) < 100  # the rest waits for the next batch


async def test_a_full_buffer_goes_at_once_and_takes_no_more_until_taken() -> None:
    source = Arrivals([(0.5, 10), (0.51, 5000)], max_=4096)
    assert await source.gather() == 0.51
    assert len(source.gathering.events) == 4096
    assert not source.gathering.taken.is_set()
    assert len(source.gathering.take()) == 4096
    assert source.gathering.taken.is_set() and not source.gathering.full.is_set()


async def test_with_no_record_it_waits_until_the_stream_stops() -> None:
    source = Arrivals([])
    source.stop_at = 3.0
    went_at = await source.gather()
    assert went_at >= 3.0 and not source.gathering.events
