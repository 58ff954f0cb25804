"""Spare capacity: the overflow agent takes a batch only while the turns agent has none.

Both agents run on one event loop, so a batch of each at once would share the loop and the
model, and the quiet tenants' L1s on the main path would wait for the overflow's. The turns
agent holds `busy()` around each batch; the overflow agent awaits `turn()` before its own,
which returns once no turns batch is running and none has for `quiet_s`, or, so that a
tenant over its share still progresses under a steady load, once it has waited `longest_s`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


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

    @contextmanager
    def busy(self) -> Iterator[None]:
        """Around a batch of the main path."""
        self._running += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._running -= 1
            self._last_done = self._clock()
            if self._running == 0:
                self._idle.set()

    async def turn(self) -> None:
        """Wait until the overflow may take a batch."""
        deadline = self._clock() + self._longest_s
        while True:
            now = self._clock()
            left = deadline - now
            if left <= 0:
                return
            if self._running == 0:
                quiet_for = now - self._last_done
                if quiet_for >= self._quiet_s:
                    return
                await asyncio.sleep(min(self._quiet_s - quiet_for, left))
                continue
            try:
                await asyncio.wait_for(self._idle.wait(), timeout=left)
            except TimeoutError:
                return
