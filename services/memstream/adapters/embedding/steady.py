"""Vectors that a replay gives again, for the texts whose vectors decide something.

A batched vector moves a little with the texts sharing its forward pass (`LocalEmbedder.
embed_each` says why), and a replay or a restart after a crash batches the same messages
differently. Where only ranking reads a vector, that is noise; where a threshold reads it,
it changes what is decided: a message's frame (`domain.fact_frames`) implies a fact or not,
so the facts a conversation keeps would depend on how its messages happened to be batched.

`SteadyVectors` embeds the texts `steady` picks each in a pass of its own (a few in a
hundred chat messages: those that could imply a fact), and the rest in shared passes as
before. Their vectors serve the L1 too, so nothing is embedded twice. `EachAlone` is an
embedder that embeds every text so (the frames' prototypes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from memstream.ports import Embedder

EmbedEach = Callable[[Sequence[str]], Awaitable[list[list[float]]]]


class EachAlone:
    """An `Embedder` that embeds every text in a forward pass of its own (`embed_each`)."""

    def __init__(self, dim: int, embed_each: EmbedEach) -> None:
        self._dim = dim
        self._embed_each = embed_each

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return await self._embed_each(texts)


class SteadyVectors:
    """`inner`'s vectors, except for the texts `steady` picks: those `embed_each` gives."""

    def __init__(
        self, inner: Embedder, embed_each: EmbedEach, steady: Callable[[str], bool]
    ) -> None:
        self._inner = inner
        self._embed_each = embed_each
        self._steady = steady

    @property
    def dim(self) -> int:
        return self._inner.dim

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        alone = [i for i, text in enumerate(texts) if self._steady(text)]
        if not alone:
            return await self._inner.embed(texts)
        if len(alone) == len(texts):
            return await self._embed_each(texts)
        picked = set(alone)
        shared = [i for i in range(len(texts)) if i not in picked]
        # Side by side: the shared texts need not wait for the ones alone.
        shared_vectors, alone_vectors = await asyncio.gather(
            self._inner.embed([texts[i] for i in shared]),
            self._embed_each([texts[i] for i in alone]),
        )
        vectors: list[list[float]] = [[] for _ in texts]
        for i, vector in zip((*shared, *alone), (*shared_vectors, *alone_vectors), strict=True):
            vectors[i] = vector
        return vectors
