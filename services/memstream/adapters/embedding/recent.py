"""The vectors of the texts embedded last, for a process where the segmenter and recall share
one embedder (`memstream up`).

An agent's usual turn publishes the user's message and recalls with that same message as the
query; in one process the segmenter has embedded the message by the time the read waiting
for it is answered, so recall's embedding of the query is the same forward pass a second
time. Texts seen in the last `size` calls are answered from here, the rest go to the model
(one call for all of them). The model is deterministic for a text, so an answer from here is
the vector the model would give, up to the last bits of a float that batch padding moves.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Sequence

from memstream.ports import Embedder


class LastVectors:
    """The vectors of the last `size` distinct texts kept, the least recently kept or
    recalled dropped first."""

    def __init__(self, size: int) -> None:
        if size <= 0:
            raise ValueError("size must be positive")
        self._size = size
        self._vectors: OrderedDict[str, list[float]] = OrderedDict()

    def __contains__(self, text: object) -> bool:
        return text in self._vectors

    def __iter__(self) -> Iterator[str]:
        return iter(self._vectors)

    def get(self, text: str) -> list[float] | None:
        """The vector kept for `text`, leaving the order alone."""
        return self._vectors.get(text)

    def recall(self, text: str) -> list[float] | None:
        """The vector kept for `text`, which is then the last to be dropped."""
        vector = self._vectors.get(text)
        if vector is not None:
            self._vectors.move_to_end(text)
        return vector

    def keep(self, text: str, vector: list[float]) -> None:
        self._vectors[text] = vector
        self._vectors.move_to_end(text)
        while len(self._vectors) > self._size:
            self._vectors.popitem(last=False)


class RecentVectors:
    """`Embedder` over `inner`, keeping the vectors of the last `size` distinct texts."""

    def __init__(self, inner: Embedder, size: int) -> None:
        self._inner = inner
        self._vectors = LastVectors(size)
        self.hits = 0  # texts answered from here, for tests and benchmarks
        # Told the texts embedded anew, with their vectors (`qdrant.index_server`: an API
        # process of the same stack keeps them too).
        self.on_kept: Callable[[list[tuple[str, list[float]]]], None] | None = None

    @property
    def dim(self) -> int:
        return self._inner.dim

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        found = [self._vectors.recall(text) for text in texts]
        missing = list(dict.fromkeys(t for t, v in zip(texts, found, strict=True) if v is None))
        if missing:
            fresh = dict(zip(missing, await self._inner.embed(missing), strict=True))
            for text, vector in fresh.items():
                self._vectors.keep(text, vector)
            if self.on_kept is not None:
                self.on_kept([(text, list(vector)) for text, vector in fresh.items()])
        else:
            fresh = {}
        self.hits += len(texts) - sum(1 for v in found if v is None)
        # A copy each: callers may change a vector in place (normalising, appending).
        return [list(fresh[t] if v is None else v) for t, v in zip(texts, found, strict=True)]

    def known(self, texts: Sequence[str]) -> list[list[float] | None]:
        """The vectors kept for these texts (None for each that is not), without the model.
        Called from another thread (`qdrant.index_server`): it only reads the dict, one
        lookup at a time under the GIL, and leaves the order alone (the segmenter's own
        embedding of a message is what keeps it)."""
        return [self._vectors.get(text) for text in texts]


class KnownVectorsFirst:
    """`Embedder` of an API process apart from the segmenter's (`memstream up` with
    `MEMSTREAM_UP_API_PROCESS`): asks `lookup` (the segmenter's process's `RecentVectors`,
    over `qdrant.remote.RemoteIndex`) for the texts' vectors first, and embeds with `inner`
    only those it does not know."""

    def __init__(
        self,
        inner: Embedder,
        lookup: Callable[[Sequence[str]], Awaitable[list[list[float] | None]]],
    ) -> None:
        self._inner = inner
        self._lookup = lookup
        self.hits = 0  # texts answered by the lookup, for tests and benchmarks

    @property
    def dim(self) -> int:
        return self._inner.dim

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        found = await self._lookup(texts)
        missing = list(dict.fromkeys(t for t, v in zip(texts, found, strict=True) if v is None))
        fresh = dict(zip(missing, await self._inner.embed(missing), strict=True)) if missing else {}
        self.hits += len(texts) - sum(1 for v in found if v is None)
        return [list(fresh[t] if v is None else v) for t, v in zip(texts, found, strict=True)]
