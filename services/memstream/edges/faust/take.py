"""Batches of a Faust stream that go as soon as the records stop coming, not on a timer,
and that gather while the previous batch is handled.

Faust's `Stream.take_events(max_, within)` yields a batch when it holds `max_` events, and
otherwise only when `within` has passed since it began to wait; and it takes no record in
while the caller handles a batch. A worker catching up on a backlog smaller than `max_`
therefore drained the whole backlog through Faust's stream (event-loop work for every
record) and then waited out the rest of `within` (0.25 s by default) after every batch, and
the embedding model idled all that time, a share of a replay that grows as the model gets
faster. A live turn waited for it too.

`take_batches` is `take_events` (same buffering of events, same acks: a batch's events are
acked only when the caller asks for the next batch, that is once it has handled this one)
with two changes:

- The next batch gathers while the caller handles this one (at most `max_` records wait,
  unacked, as they would in the consumer's queue), so it is ready when the caller is.
- A batch goes as soon as no record has come for `idle_s` (the records already fetched are
  in; a new fetch would bring more within that), or when it is full, or at the latest
  `within` after its first record.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

import faust

# Wait: (event, seconds) -> awaits the event for at most that long; True if the stream
# stopped meanwhile.
Wait = Callable[[asyncio.Event, float], Awaitable[bool]]


class Gathering:
    """The events of the next batch, with when its first and latest arrived."""

    def __init__(self, max_: int, clock: Callable[[], float]) -> None:
        self.max = max_
        self.events: list[Any] = []
        self.first_at = 0.0
        self.last_at = 0.0
        self.full = asyncio.Event()  # holds max_ events: the batch goes, the adder waits
        self.arrived = asyncio.Event()  # the first event of an empty batch came
        self.taken = asyncio.Event()  # a full batch was taken: the adder may go on
        self._clock = clock

    def add(self, event: Any) -> None:
        now = self._clock()
        if not self.events:
            self.first_at = now
            self.arrived.set()
        self.last_at = now
        self.events.append(event)
        if len(self.events) >= self.max:
            self.taken.clear()
            self.full.set()

    def take(self) -> list[Any]:
        batch, self.events = self.events, []
        self.full.clear()
        self.arrived.clear()
        self.taken.set()
        return batch


async def gather_until_idle(
    gathering: Gathering, wait: Wait, *, within: float, idle_s: float, clock: Callable[[], float]
) -> None:
    """Return once the batch should go: it has events and none came for `idle_s`, or it is
    full, or `within` passed since its first event; or the stream stopped. With no event at
    all, this waits (waking every `within`, as Faust does)."""
    while not gathering.events:
        if await wait(gathering.arrived, within):
            return
    while not gathering.full.is_set():
        now = clock()
        quiet = now - gathering.last_at
        left = within - (now - gathering.first_at)
        if quiet >= idle_s or left <= 0:
            return
        if await wait(gathering.full, min(idle_s - quiet, left)):
            return


def take_batches(
    stream: faust.StreamT[Any], max_: int, *, within: float, idle_s: float
) -> AsyncIterator[list[faust.EventT]]:
    """`stream.take_events(max_, within)`, with the two changes above."""
    batches = _take(stream, max_, within, idle_s)
    # As Faust does for its own: the stream closes a generator left behind when it stops.
    stream._active_agens.add(batches)  # type: ignore[attr-defined]
    return batches


async def _take(
    stream: faust.StreamT[Any], max_: int, within: float, idle_s: float
) -> AsyncGenerator[list[faust.EventT], None]:
    # The same machinery as Faust's take_events (faust-streaming 0.15.3, pinned).
    s: Any = stream
    clock = asyncio.get_running_loop().time
    gathering = Gathering(max_, clock)

    async def add_to_buffer(value: Any) -> Any:
        try:
            event = s.current_event
            if event is None:
                raise RuntimeError("take buffer found current_event is None")
            gathering.add(event)
            if gathering.full.is_set():
                await s.wait(gathering.taken)  # never more than max_ in a batch
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            s.log.exception("Error adding to take buffer: %r", exc)
            await s.crash(exc)
        return value

    async def wait(event: asyncio.Event, seconds: float) -> bool:
        return bool(await s.wait_for_stopped(event, timeout=seconds))

    enable_acks = s.enable_acks
    s.enable_acks = False  # acked below, once the caller has handled the batch
    s.add_processor(add_to_buffer)
    s._enable_passive(s.channel.__aiter__())
    try:
        while not s.should_stop:
            await gather_until_idle(gathering, wait, within=within, idle_s=idle_s, clock=clock)
            if not gathering.events:
                continue
            batch = gathering.take()
            try:
                yield batch
            finally:
                for event in batch:
                    await s.ack(event)
    finally:
        s.enable_acks = enable_acks
        s._processors.remove(add_to_buffer)
