"""One embedder, two queues: background work waits while an online batch is anywhere in flight."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from memstream.adapters.embedding.priority import PriorityEmbedder


class CountingEmbedder:
    dim = 1

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [[1.0] for _ in texts]


async def test_background_waits_for_a_whole_online_batch_not_only_its_embed_call() -> None:
    inner = CountingEmbedder()
    embedders = PriorityEmbedder(inner, quiet_s=0.05, background_chunk=2)
    async with embedders.online():
        background = asyncio.create_task(embedders.background.embed(["s1", "s2", "s3"]))
        await embedders.urgent.embed(["turn"])
        await asyncio.sleep(0.2)  # long past quiet_s: only the open batch holds it back
        assert inner.calls == [["turn"]]
        assert not background.done()
    async with asyncio.timeout(5):
        assert await background == [[1.0], [1.0], [1.0]]
    assert inner.calls == [["turn"], ["s1", "s2"], ["s3"]]


async def test_background_runs_at_once_when_nothing_online_happened() -> None:
    inner = CountingEmbedder()
    embedders = PriorityEmbedder(inner, quiet_s=10.0)
    async with asyncio.timeout(5):
        assert await embedders.background.embed(["summary"]) == [[1.0]]


async def test_concurrent_online_calls_reach_the_embedder_together() -> None:
    # Recall queries must not queue one by one in front of the embedder: it batches them.
    inner = CountingEmbedder()
    inside = 0
    most_inside = 0

    async def embed(texts: Sequence[str]) -> list[list[float]]:
        nonlocal inside, most_inside
        inside += 1
        most_inside = max(most_inside, inside)
        await asyncio.sleep(0)
        inside -= 1
        return await CountingEmbedder.embed(inner, texts)

    inner.embed = embed  # type: ignore[method-assign]
    embedders = PriorityEmbedder(inner)
    await asyncio.gather(*(embedders.urgent.embed([f"q{i}"]) for i in range(5)))
    assert most_inside == 5
