"""When a batch of a Faust stream goes: as soon as the records stop coming, not on a timer.

A batch goes once no record has come for `idle_s` (the records already fetched are in; a
new fetch would bring more within that), or when it holds `max_` records, or at the latest
`within` after its first record. This is the waiting logic alone, on any clock; the Faust
plumbing that feeds it and acks the batches is `overrides.take_batches`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

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

    def __len__(self) -> int:
        return len(self.events)

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
