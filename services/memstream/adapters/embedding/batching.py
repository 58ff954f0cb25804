"""Micro-batching: concurrent embed calls share one forward pass.

Recall embeds one short query per request. Embedded one after another, fifty concurrent
queries queue behind each other, and the embed stage, not the search, set the latency under
load; a forward pass over fifty short texts costs little more
than over one. So calls are queued, and whenever the model is free, everything waiting is
sent to it as one batch:

- There is no timer: the first call of an idle embedder goes at once (after one turn of the
  event loop, which lets calls made in the same moment join it); calls arriving while a
  batch runs form the next batch. A small call therefore waits for at most the batch in
  front of it.
- Small calls (up to `max_texts` texts, e.g. queries) go before bulk work. A bulk call (a
  write-path step of a thousand messages) is cut into pieces of `max_texts`, texts of
  similar length together (little padding), and up to `bulk_pieces` pieces make a batch.
  With `spread` model processes (more than one), a call of `MIN_SPREAD_PIECE` texts a
  process or more is bulk too, and its pieces are a multiple of `spread` in number, each
  of about the same modelled cost (`passes.text_cost`), so a piece of long texts holds
  fewer of them (the model cuts its forward passes within a batch). Equal counts made equal
  work only for equal lengths: a piece of the longest texts kept one model process busy
  long after the other had finished its piece of short ones. One process
  (`MEMSTREAM_EMBED_PROCESSES=1`) has nothing to balance, and its model spent more CPU a
  message over the uneven pieces, so it keeps equal counts.
  The longest go first: with several model processes the last batches of a call are then
  the cheapest, and the processes finish it at nearly the same time (sent shortest first,
  one process was still on the costliest batch while the other waited).
  Length is counted in words and punctuation marks (`approximate_tokens`), what the model's
  tokenizer splits first, which ranks texts by tokens better than characters do (fewer
  padded tokens and less attention work, for a regex pass per text); the ONNX model then
  sorts each batch by its exact token counts (`onnx_model`).
- Bulk batches go to the model `bulk_depth` at a time (two per model process): a process
  takes the next from its queue the moment it finishes one. With one at a time, every batch
  was a round trip through the event loop, which in a worker is busy reducing and storing,
  and the faster int8 model idled in between. When no more pieces wait than there are
  slots, they go a piece a batch, so that every model process gets some of a short call (a
  worker's first batch of a few dozen messages ran on one process of two) and the
  processes finish a long one together.
- A small call takes the first free slot, ahead of any bulk piece, so it waits for at most
  the batch in front of it in its process; one batch of small calls is in flight at a time,
  and calls arriving meanwhile form the next. Bulk pieces keep filling the other slots
  while it waits. (They used to stop until every bulk batch sent had returned: in a worker,
  one held-over message to embed again left the model processes idle for a second while
  the batches in flight drained.)
- A failed batch fails every call in it with the same error; a caller who gives up
  (cancelled) leaves the others' batch alone.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import re
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from memstream.adapters.embedding.passes import text_cost

Vectors = list[list[float]]
EmbedMany = Callable[[list[str]], Awaitable[Vectors]]

_WORD_OR_MARK = re.compile(r"\w+|[^\w\s]")


def approximate_tokens(text: str) -> int:
    """Words and punctuation marks: a lower bound of a WordPiece model's token count."""
    return len(_WORD_OR_MARK.findall(text))


# With several model processes, a call of at least this many texts a process is spread
# over them (bulk), not sent to one as a small call: a worker's first batch, a few dozen
# messages, otherwise ran on one process while the other waited.
MIN_SPREAD_PIECE = 16


def even_cuts(costs: Sequence[float], pieces: int) -> list[int]:
    """Where to cut a run of items of these `costs` into `pieces` contiguous, non-empty
    pieces of about equal cost: `pieces + 1` bounds, from 0 to `len(costs)`. Each cut is the
    item boundary nearest its share of the total (as far as every piece keeps an item)."""
    if not 0 < pieces <= len(costs):
        raise ValueError("pieces must be between 1 and the number of items")
    before = [0.0, *itertools.accumulate(costs)]  # before[i]: the cost of items 0..i-1
    bounds = [0]
    for k in range(1, pieces):
        target = before[-1] * k / pieces
        nearest = bisect.bisect_left(before, target)
        if nearest > 0 and target - before[nearest - 1] <= before[nearest] - target:
            nearest -= 1  # the boundary before the target is the nearer one
        lowest, highest = bounds[-1] + 1, len(costs) - (pieces - k)
        bounds.append(min(max(nearest, lowest), highest))
    bounds.append(len(costs))
    return bounds


@dataclass
class _Piece:
    texts: list[str]
    done: asyncio.Future[Vectors]


class MicroBatcher:
    """Queue `embed` calls and hand `embed_many` batches (see the module doc)."""

    def __init__(
        self,
        embed_many: EmbedMany,
        *,
        max_texts: int = 64,
        bulk_pieces: int = 2,
        bulk_depth: int = 2,
        spread: int = 1,
    ) -> None:
        if min(max_texts, bulk_pieces, bulk_depth, spread) <= 0:
            raise ValueError("max_texts, bulk_pieces, bulk_depth and spread must be positive")
        self._embed_many = embed_many
        self._max = max_texts
        self._bulk_pieces = bulk_pieces
        self._bulk_depth = bulk_depth
        self._spread = spread
        self._small: deque[_Piece] = deque()
        self._bulk: deque[_Piece] = deque()
        self._drain: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()  # new work queued or a batch finished
        self.batches = 0  # forward passes requested so far (for tests and benchmarks)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        spread = self._spread > 1 and len(texts) >= self._spread * MIN_SPREAD_PIECE
        if len(texts) <= self._max and not spread:
            piece = _Piece(list(texts), loop.create_future())
            self._small.append(piece)
            self._wake()
            return await piece.done
        return await self._embed_bulk(list(texts))

    async def _embed_bulk(self, texts: list[str]) -> Vectors:
        loop = asyncio.get_running_loop()
        lengths = [approximate_tokens(text) for text in texts]
        order = sorted(range(len(texts)), key=lengths.__getitem__, reverse=True)
        if self._spread > 1:
            # As many pieces as pieces of max_texts would make, rounded up to a multiple of
            # the processes, so that each process gets as much of the call.
            rounds = -(-len(texts) // (self._max * self._spread))
            count = min(len(texts), rounds * self._spread)
            # Words and marks, and the two tokens the tokenizer adds to every text.
            bounds = even_cuts([text_cost(lengths[i] + 2) for i in order], count)
        else:
            bounds = [*range(0, len(texts), self._max), len(texts)]
        pieces = [
            _Piece([texts[i] for i in order[lo:hi]], loop.create_future())
            for lo, hi in itertools.pairwise(bounds)
        ]
        self._bulk.extend(pieces)
        self._wake()
        try:
            parts = await asyncio.gather(*(p.done for p in pieces))
        except BaseException:
            for piece in pieces:
                piece.done.cancel()  # the rest of this call is wanted by no one
            raise
        vectors: Vectors = [[] for _ in texts]
        for index, vector in zip(order, (v for part in parts for v in part), strict=True):
            vectors[index] = vector
        return vectors

    def _wake(self) -> None:
        self._changed.set()
        if self._drain is None or self._drain.done():
            self._drain = asyncio.create_task(self._run(), name="embed-micro-batches")

    def _next_batch(self, running: int, running_small: bool) -> tuple[list[_Piece], bool]:
        """The next batch to send while `running` batches are in the model (one of them of
        small calls if `running_small`), and whether it is of small calls; or no batch yet."""
        if running >= self._bulk_depth:
            return [], False
        while self._small and self._small[0].done.done():
            self._small.popleft()  # a cancelled caller's texts are not worth a pass
        if self._small and not running_small:
            # Queries go first: not behind a bulk batch sent after them.
            batch: list[_Piece] = []
            count = 0
            while self._small and count + len(self._small[0].texts) <= self._max:
                piece = self._small.popleft()
                if not piece.done.done():
                    batch.append(piece)
                    count += len(piece.texts)
            return batch, True
        # A short queue is spread over the slots, a piece a batch, so that every process
        # gets a share and none is left with a long batch at the end of a call.
        size = min(self._bulk_pieces, -(-len(self._bulk) // self._bulk_depth))
        batch = []
        while self._bulk and len(batch) < size:
            piece = self._bulk.popleft()
            if not piece.done.done():
                batch.append(piece)
        return batch, False

    async def _run(self) -> None:
        await asyncio.sleep(0)  # calls made in this same moment join the first batch
        running: set[asyncio.Task[None]] = set()
        small: asyncio.Task[None] | None = None  # the batch of small calls in the model
        try:
            while True:
                self._changed.clear()
                while True:
                    batch, of_small = self._next_batch(len(running), small is not None)
                    if not batch:
                        break
                    self.batches += 1
                    task = asyncio.create_task(self._serve(batch))
                    task.add_done_callback(lambda _: self._changed.set())
                    running.add(task)
                    if of_small:
                        small = task
                if not running and not self._small and not self._bulk:
                    return
                await self._changed.wait()
                running = {task for task in running if not task.done()}
                if small is not None and small.done():
                    small = None
        except BaseException:
            # The loop is going away: nobody is left to serve the waiting calls.
            for task in running:
                task.cancel()
            for piece in [*self._small, *self._bulk]:
                piece.done.cancel()
            raise

    async def _serve(self, batch: list[_Piece]) -> None:
        texts = [text for piece in batch for text in piece.texts]
        try:
            vectors = await self._embed_many(texts)
        except Exception as exc:
            for piece in batch:
                if not piece.done.done():
                    piece.done.set_exception(exc)
            return
        except BaseException:
            for piece in batch:
                piece.done.cancel()
            raise
        start = 0
        for piece in batch:
            end = start + len(piece.texts)
            if not piece.done.done():
                piece.done.set_result(vectors[start:end])
            start = end
