"""Embedding a batch's steps one after another, ahead of the step being stored.

The embedder is the write path's bottleneck; everything else a step does (reduce, write the
L1s, store, commit, publish) waits on the network or takes little CPU. So the texts of every step
are handed to the embedder in order as soon as the batch arrives, and while step k is being
stored, step k+1 is already being embedded: the embedder never waits for the stores.

Two steps are with the embedder at a time (`depth`): step k+1's texts are queued there
before step k's vectors come back, so the model goes straight on from one to the next
instead of waiting for the event loop to read step k's result and send step k+1 (with the
int8 model, those waits at step boundaries were a tenth of the run). The local embedder
queues concurrent calls and runs them in order (`batching`), so they do not fight over the
cores; a third is not needed, and would only add work to throw away after a failure.

A step may need texts that none of the batch's chunks holds: a message held over in the
window state from an earlier batch (a question waiting for its reply), or the remaining
messages of a leaf written again. Its vectors were not kept (the state is what survives a
crash, not vectors), so they are embedded again, and as soon as the step knows them
(`also`), not once its own chunk is back: a small call goes ahead of the chunks still
queued, and is back before the step needs it.
"""

from __future__ import annotations

import asyncio
from collections import ChainMap, deque
from collections.abc import Iterable, Mapping, Sequence

from memstream.ports import Embedder

Vectors = dict[str, list[float]]

# A batch's last step: more texts than one piece of the embedder (64), so that its
# embedding is spread over the model processes.
LAST_STEP = 128
# Each step before it up to this many times the next. While a step is stored, the model
# embeds the two behind it (`depth`), so those must take the model at least as long as the
# step takes the event loop: growing by three, they do while storing a message takes the
# loop under four ninths of what embedding it takes the model processes.
STEP_GROWTH = 3
# With the int8 model, and the facts and entities read at every L1, storing takes the loop
# about half the model's time: steps of 384 and 128 left the model waiting at every batch's
# end while the 384 were stored. Growing by two, they fit up to three quarters. (Torch's
# model, several times slower, lost speed over the smaller calls: it keeps three.)
FAST_MODEL_STEP_GROWTH = 2


def step_growth(backend: str, runtime: str) -> int:
    """How much each of a batch's last steps grows towards its start, for this embedder."""
    return FAST_MODEL_STEP_GROWTH if (backend, runtime) == ("local", "onnx-int8") else STEP_GROWTH


def step_sizes(count: int, step_size: int, growth: int = STEP_GROWTH) -> list[int]:
    """How many records each step of a batch of `count` takes, in order: `step_size` at
    most, the last steps smaller and smaller down to `LAST_STEP`, each up to `growth` times
    the next.

    Nothing overlaps the store of a batch's last step: the model has embedded everything by
    then and waits for the event loop to store and commit that step before the next batch.
    With steps all of one size the model idled there at the end of every large batch, so
    the last steps shrink.
    """
    if count <= 0:
        return []
    last = min(LAST_STEP, step_size)
    tail: list[int] = []  # from the last step backwards
    size = last
    covered = 0
    while covered + size < count:
        tail.append(size)
        covered += size
        size = min(size * growth, step_size)
    front = count - covered
    if tail and front < last and tail[-1] + front <= step_size:
        tail[-1] += front  # no step of a handful of records at the head
        front = 0
    return [n for n in (front, *reversed(tail)) if n]


class EmbeddingsAhead:
    """Embeds `chunks` of texts in order, in the background, from construction on, with
    at most `depth` chunks at the embedder at a time.

    Must be created inside a running event loop and closed with `close()`.
    """

    def __init__(self, embedder: Embedder, chunks: Sequence[Sequence[str]], depth: int = 2) -> None:
        if depth <= 0:
            raise ValueError("depth must be positive")
        loop = asyncio.get_running_loop()
        self._embedder = embedder
        self._chunks = chunks
        self._ready: list[asyncio.Future[Vectors]] = [loop.create_future() for _ in chunks]
        self._task = asyncio.create_task(self._run(embedder, chunks, depth))
        self._also: dict[int, list[tuple[set[str], asyncio.Task[Vectors]]]] = {}

    async def _run(self, embedder: Embedder, chunks: Sequence[Sequence[str]], depth: int) -> None:
        calls: deque[tuple[int, asyncio.Task[list[list[float]]]]] = deque()
        sent = 0
        try:
            while sent < len(chunks) or calls:
                while sent < len(chunks) and len(calls) < depth:
                    # Created in order, so the calls reach the embedder in order.
                    calls.append((sent, asyncio.create_task(embedder.embed(chunks[sent]))))
                    sent += 1
                index, call = calls.popleft()
                try:
                    vectors = await call
                except Exception as error:
                    # Every later step needs the embedder too: fail them all with this error.
                    for pending in self._ready:
                        if not pending.done():
                            pending.set_exception(error)
                    return
                self._ready[index].set_result(dict(zip(chunks[index], vectors, strict=True)))
        finally:
            for _, call in calls:
                call.cancel()
            await asyncio.gather(*(call for _, call in calls), return_exceptions=True)

    def also(self, step: int, texts: Iterable[str]) -> None:
        """Start embedding now those of `texts` that no chunk up to `step` holds, nor an
        earlier `also` of that step; `through` of that step includes them."""
        added = self._also.setdefault(step, [])
        known = set().union(*self._chunks[: step + 1], *(texts for texts, _ in added))
        missing = list(dict.fromkeys(text for text in texts if text not in known))
        if missing:
            added.append((set(missing), asyncio.create_task(self._embed(missing))))

    async def _embed(self, texts: list[str]) -> Vectors:
        return dict(zip(texts, await self._embedder.embed(texts), strict=True))

    async def vectors(self, step: int) -> Vectors:
        """The vectors of the texts of chunk `step`, once they are all embedded."""
        return await asyncio.shield(self._ready[step])

    async def through(self, step: int) -> Mapping[str, list[float]]:
        """The vectors of the texts of chunks 0 to `step` (the later chunk's where a text is
        in two), and of the texts `also` added for `step`, once they are all embedded: a
        message held over from an earlier step of the batch (a question waiting for its
        reply) is found there, not embedded again."""
        own = await self.vectors(step)
        # Embedded in order: every earlier chunk is done (or failed, and so is this one).
        earlier = [self._ready[k].result() for k in reversed(range(step))]
        extra = [await asyncio.shield(task) for _, task in self._also.get(step, ())]
        return ChainMap(own, *earlier, *extra)

    async def close(self) -> None:
        """Stop embedding what no step will ask for (after a failure or cancellation)."""
        also = [task for added in self._also.values() for _, task in added]
        for task in (self._task, *also):
            task.cancel()
        await asyncio.gather(self._task, *also, return_exceptions=True)
        for ready in self._ready:
            if not ready.done():
                ready.cancel()
            elif not ready.cancelled():
                ready.exception()  # retrieved: asyncio would log an unread error otherwise
