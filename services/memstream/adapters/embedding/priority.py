"""One embedder, two queues: the online path first, consolidation when it is idle.

L1 memories must be searchable within a moment of the turn; a consolidation may wait
minutes. On a small machine both compete for the same cores, so consolidation embeds only
while no L1 batch is waiting or running. Under sustained input this delays consolidation
(visible as consolidation lag), never ingestion.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from memstream.ports import Embedder


class PriorityEmbedder:
    """Hands out an `urgent` and a `background` view of one embedder.

    Background calls wait until no urgent call has run for `quiet_s`: between two batches
    of a busy stream there is only a moment of idleness, too short to be worth taking.
    """

    def __init__(
        self, inner: Embedder, *, quiet_s: float = 0.5, background_chunk: int = 16
    ) -> None:
        self._inner = inner
        self._quiet_s = quiet_s
        # Background work goes in small pieces, so an urgent call waits for one piece at most.
        self._chunk = background_chunk
        self._last_urgent = float("-inf")
        self._urgent_active = 0
        self._idle = asyncio.Event()
        self._idle.set()
        # Background pieces one at a time, never while an online call runs. Online calls do
        # not queue here: concurrent ones (recall queries) must reach the embedder together
        # so that it can batch them (`batching`); it runs one forward pass at a time anyway.
        self._lock = asyncio.Lock()
        self.urgent = _View(self, urgent=True)
        self.background = _View(self, urgent=False)

    @property
    def dim(self) -> int:
        return self._inner.dim

    @asynccontextmanager
    async def online(self) -> AsyncIterator[None]:
        """Hold background work off for the whole of an online batch, not only its embed call.

        A batch decodes and reduces before it embeds, and stores after; a background piece
        started in those moments would make the next embed call wait for it.
        """
        self._urgent_active += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._urgent_active -= 1
            self._last_urgent = time.monotonic()
            if self._urgent_active == 0:
                self._idle.set()

    async def _embed(self, texts: Sequence[str], *, urgent: bool) -> list[list[float]]:
        if urgent:
            async with self.online():
                return await self._inner.embed(texts)
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._chunk):
            vectors += await self._embed_when_quiet(texts[start : start + self._chunk])
        return vectors

    async def _embed_when_quiet(self, texts: Sequence[str]) -> list[list[float]]:
        while True:
            await self._idle.wait()
            quiet_for = time.monotonic() - self._last_urgent
            if quiet_for < self._quiet_s:
                await asyncio.sleep(self._quiet_s - quiet_for)
                continue
            async with self._lock:
                if self._urgent_active == 0:
                    return await self._inner.embed(texts)
            # an urgent call arrived while we waited for the lock: let it go first


class _View:
    def __init__(self, owner: PriorityEmbedder, *, urgent: bool) -> None:
        self._owner = owner
        self._urgent = urgent

    @property
    def dim(self) -> int:
        return self._owner.dim

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return await self._owner._embed(texts, urgent=self._urgent)
