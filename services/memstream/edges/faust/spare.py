"""Spare capacity: the overflow agent takes a batch only while the turns agent has none,
running or gathering.

Both agents run on one event loop, so a batch of each at once would share the loop and the
model, and the quiet tenants' L1s on the main path would wait for the overflow's. The turns
agent holds `handling()` around each batch and shows the records gathered for its next one
(`waiting_in`); the overflow agent awaits `turn()` before its own, which returns once no
turns batch is running, no record waits for the next, and neither has for `quiet_s`; or,
so that a tenant over its share still progresses under a steady load, once it has waited
`longest_s`. Records waiting count as much as a batch running: under a flood the turns
agent gathers its next batch in the gaps between two, and an overflow batch started in such
a gap held up the batch that came next, with the quiet tenants' turns in it.

A turn lets the overflow read its next batch; it handles the batch only while no turns
batch runs, and a turns batch waits for the overflow batch being handled (`handling` and
`overflow_handling`, one lock, first come first served). After its longest wait the
overflow's batch therefore goes between two turns batches, not beside one: handled beside
one, both shared the loop and the model, and a turns batch of the fairness benchmark that
met an overflow batch took several times as long, the quiet tenants' turns behind it with
it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sized
from contextlib import asynccontextmanager

# How often a waiting overflow looks again while the turns agent has records gathered (no
# event marks the moment the last of them is taken).
LOOK_AGAIN_S = 0.01


class SpareCapacity:
    def __init__(
        self,
        *,
        quiet_s: float = 0.05,
        longest_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._quiet_s = quiet_s
        self._longest_s = longest_s
        self._clock = clock
        self._running = 0
        self._last_done = float("-inf")
        self._idle = asyncio.Event()
        self._idle.set()
        self._gathered: Sized = ()
        # Held by the batch being handled, of either side: the two never share the loop.
        self._handler = asyncio.Lock()

    def waiting_in(self, gathered: Sized) -> None:
        """The records the turns agent has gathered for its next batch (read, not kept)."""
        self._gathered = gathered

    @asynccontextmanager
    async def handling(self) -> AsyncIterator[None]:
        """Around a batch of the main path: it first waits for the overflow batch being
        handled, if any (one at most: the overflow's next waits for this one)."""
        self._running += 1
        self._idle.clear()
        try:
            async with self._handler:
                yield
        finally:
            self._running -= 1
            self._last_done = self._clock()
            if self._running == 0:
                self._idle.set()

    @asynccontextmanager
    async def overflow_handling(self) -> AsyncIterator[None]:
        """Around the handling of an overflow batch: it waits for the turns batch running."""
        async with self._handler:
            yield

    async def turn(self) -> None:
        """Wait until the overflow may take a batch."""
        deadline = self._clock() + self._longest_s
        gathering_seen = float("-inf")  # when records last waited for the turns agent
        while True:
            now = self._clock()
            left = deadline - now
            if left <= 0:
                return
            if self._running:
                try:
                    await asyncio.wait_for(self._idle.wait(), timeout=left)
                except TimeoutError:
                    return
                continue
            if len(self._gathered):
                gathering_seen = now
                await asyncio.sleep(min(LOOK_AGAIN_S, left))
                continue
            quiet_for = now - max(self._last_done, gathering_seen)
            if quiet_for >= self._quiet_s:
                return
            await asyncio.sleep(min(self._quiet_s - quiet_for, left))
