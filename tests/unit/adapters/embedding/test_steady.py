"""The texts picked to be steady are embedded each alone, the rest as before, and every text
gets its own vector back in the order asked (the real model alone and beside a bulk call:
`test_local_embedder.py`)."""

from __future__ import annotations

from collections.abc import Sequence

from memstream.adapters.embedding.embedders import HashingEmbedder
from memstream.adapters.embedding.steady import EachAlone, SteadyVectors

HASHING = HashingEmbedder(dim=16)


class Recording:
    """The inner embedder and the one that embeds texts alone, each noting what it was asked."""

    def __init__(self, alone_mark: float = 0.0) -> None:
        self.calls: list[list[str]] = []
        self._alone_mark = alone_mark

    @property
    def dim(self) -> int:
        return HASHING.dim

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        # Marked, so the test sees which path a vector came from.
        return [[self._alone_mark, *HASHING.embed_one(t)[1:]] for t in texts]


def capitalised(text: str) -> bool:
    return text[:1].isupper()


async def test_picked_texts_are_embedded_alone_and_every_vector_comes_back_in_order() -> None:
    inner, alone = Recording(), Recording(alone_mark=9.0)
    steady = SteadyVectors(inner, alone.embed, capitalised)
    texts = ["lisbon", "Lisbon", "porto", "Porto", "Lisbon"]

    vectors = await steady.embed(texts)

    assert inner.calls == [["lisbon", "porto"]]
    assert alone.calls == [["Lisbon", "Porto", "Lisbon"]]
    assert [v[0] for v in vectors] == [0.0, 9.0, 0.0, 9.0, 9.0]
    for text, vector in zip(texts, vectors, strict=True):
        assert vector[1:] == HASHING.embed_one(text)[1:]
    assert steady.dim == 16


async def test_with_none_picked_the_inner_embedder_alone_is_asked_and_with_all_only_alone() -> None:
    inner, alone = Recording(), Recording(alone_mark=9.0)
    steady = SteadyVectors(inner, alone.embed, capitalised)

    assert len(await steady.embed(["a", "b"])) == 2
    assert len(await steady.embed(["A", "B"])) == 2

    assert inner.calls == [["a", "b"]]
    assert alone.calls == [["A", "B"]]


async def test_each_alone_is_an_embedder_of_its_function() -> None:
    alone = Recording(alone_mark=9.0)
    each = EachAlone(16, alone.embed)

    assert each.dim == 16
    assert [v[0] for v in await each.embed(["x", "y"])] == [9.0, 9.0]
    assert alone.calls == [["x", "y"]]
