"""The vectors of recent texts: a query that is a message just embedded is not embedded again."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from memstream.adapters.embedding.embedders import HashingEmbedder
from memstream.adapters.embedding.recent import RecentVectors


class CountingEmbedder:
    def __init__(self) -> None:
        self.inner = HashingEmbedder(dim=8)
        self.calls: list[list[str]] = []

    @property
    def dim(self) -> int:
        return self.inner.dim

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return await self.inner.embed(texts)


async def test_a_text_embedded_once_is_answered_from_memory_with_the_same_vector() -> None:
    model = CountingEmbedder()
    recent = RecentVectors(model, size=4)
    [message] = await recent.embed(["I adopted a cat named Miso"])
    [query] = await recent.embed(["I adopted a cat named Miso"])
    assert query == message == model.inner.embed_one("I adopted a cat named Miso")
    assert model.calls == [["I adopted a cat named Miso"]]
    assert recent.hits == 1


async def test_only_the_texts_not_seen_go_to_the_model_once_each_in_order() -> None:
    model = CountingEmbedder()
    recent = RecentVectors(model, size=4)
    await recent.embed(["a", "b"])
    got = await recent.embed(["c", "a", "c", "d"])
    assert model.calls == [["a", "b"], ["c", "d"]]
    assert got == await model.inner.embed(["c", "a", "c", "d"])


async def test_the_least_recently_used_text_is_forgotten_past_the_size() -> None:
    model = CountingEmbedder()
    recent = RecentVectors(model, size=2)
    await recent.embed(["a"])
    await recent.embed(["b"])
    await recent.embed(["a"])  # used again: "b" is now the oldest
    await recent.embed(["c"])
    await recent.embed(["a"])
    await recent.embed(["b"])
    assert model.calls == [["a"], ["b"], ["c"], ["b"]]


async def test_an_answer_is_a_copy_a_caller_may_change() -> None:
    recent = RecentVectors(CountingEmbedder(), size=2)
    [first] = await recent.embed(["a"])
    first[0] = 99.0
    [again] = await recent.embed(["a"])
    assert again[0] != 99.0


def test_a_size_of_zero_is_refused() -> None:
    with pytest.raises(ValueError):
        RecentVectors(CountingEmbedder(), size=0)
