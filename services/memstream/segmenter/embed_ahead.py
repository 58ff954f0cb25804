"""Embedding a batch's steps one after another, ahead of the step being stored.

The embedder is the write path's bottleneck; everything else a step does (reduce, write the
L1s, store, commit, publish) waits on the network or takes little CPU. So the texts of every step
are handed to the embedder in order as soon as the batch arrives, and while step k is being
stored, step k+1 is already being embedded: the embedder never waits for the stores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from memstream.ports import Embedder

Vectors = dict[str, list[float]]


class EmbeddingsAhead:
    """Embeds `chunks` of texts in order, in the background, from construction on.

    Must be created inside a running event loop and closed with `close()`.
    """

    def __init__(self, embedder: Embedder, chunks: Sequence[Sequence[str]]) -> None:
        loop = asyncio.get_running_loop()
        self._ready: list[asyncio.Future[Vectors]] = [loop.create_future() for _ in chunks]
        self._task = asyncio.create_task(self._run(embedder, chunks))

    async def _run(self, embedder: Embedder, chunks: Sequence[Sequence[str]]) -> None:
        for texts, ready in zip(chunks, self._ready, strict=True):
            try:
                vectors = await embedder.embed(texts)
            except Exception as error:
                # Every later step needs the embedder too: fail them all with this error.
                for pending in self._ready:
                    if not pending.done():
                        pending.set_exception(error)
                return
            ready.set_result(dict(zip(texts, vectors, strict=True)))

    async def vectors(self, step: int) -> Vectors:
        """The vectors of the texts of chunk `step`, once they are all embedded."""
        return await asyncio.shield(self._ready[step])

    async def close(self) -> None:
        """Stop embedding what no step will ask for (after a failure or cancellation)."""
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        for ready in self._ready:
            if not ready.done():
                ready.cancel()
            elif not ready.cancelled():
                ready.exception()  # retrieved: asyncio would log an unread error otherwise
