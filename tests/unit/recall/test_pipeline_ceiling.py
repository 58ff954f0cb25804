"""Through the pipeline: a token ceiling above the default is spent on the next-best
memories (more leaves, in score order: the gate is not asked there) instead of stopping
where the default's counts and gate stop; at or below the default, recall is as before."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from tests.unit.fakes import FakeEmbedder, FakeIndex, FakeLLM, FakeTree, sample_tree

from memstream.domain.models import Level, ScoredId
from memstream.domain.recall_options import RecallOptions
from memstream.recall.pipeline import RecallPipeline, RecallRequest

KEPT = "u1-l0000"  # the one leaf the gate keeps


class SearchLimits(FakeIndex):
    """The fake index, noting how many candidates each search asked for."""

    def __init__(self, tree: FakeTree) -> None:
        super().__init__(tree)
        self.limits: list[int] = []

    async def search_leaves(self, *args: Any, limit: int, **kwargs: Any) -> list[ScoredId]:
        self.limits.append(limit)
        return await super().search_leaves(*args, limit=limit, **kwargs)


def pipeline(
    index: Sequence[SearchLimits] = (), llm: FakeLLM | None = None, **options: Any
) -> RecallPipeline:
    tree = FakeTree(sample_tree())
    settings = RecallOptions(leaf_top_k=4, leaf_pool=4, default_max_tokens=400)
    return RecallPipeline(
        tree=tree,  # type: ignore[arg-type]
        index=index[0] if index else FakeIndex(tree),
        embedder=FakeEmbedder(),
        llm=llm or FakeLLM(gate_answer=[KEPT]),
        options=replace(settings, **options),
    )


def leaves(result: object) -> list[str]:
    return [m.node.id for m in result.memories if m.node.level is Level.SEGMENT]  # type: ignore[attr-defined]


async def test_the_default_ceiling_returns_what_the_gate_kept() -> None:
    result = await pipeline().recall(RecallRequest("u1", "Did Dana go hiking?"))
    assert leaves(result) == [KEPT]
    explicit = await pipeline().recall(RecallRequest("u1", "Did Dana go hiking?", max_tokens=400))
    assert leaves(explicit) == [KEPT]


async def test_a_larger_ceiling_fills_with_more_leaves_after_those_the_gate_kept() -> None:
    recall = pipeline(ceiling_gate=True)
    result = await recall.recall(RecallRequest("u1", "Did Dana go hiking?", max_tokens=1600))
    found = leaves(result)
    # Four times the default ceiling: up to 16 leaves go on, the gate's pick among them.
    assert KEPT in found and 4 < len(found) <= 16
    assert result.tokens <= 1600


async def test_above_the_default_ceiling_the_gate_is_not_asked() -> None:
    llm = FakeLLM(gate_answer=[KEPT])
    recall = pipeline(llm=llm)
    at_default = await recall.recall(RecallRequest("u1", "Did Dana go hiking?"))
    assert leaves(at_default) == [KEPT] and len(llm.gated) == 1
    above = await recall.recall(RecallRequest("u1", "Did Dana go hiking?", max_tokens=1600))
    assert len(llm.gated) == 1  # not asked again
    # Every leaf kept goes to the fit in score order, the gate's pick among them.
    assert KEPT in leaves(above) and len(leaves(above)) > 1
    # A gate that would fail cannot degrade an answer it is not asked for.
    failing = pipeline(llm=FakeLLM(gate_answer="raise"))
    assert (await failing.recall(RecallRequest("u1", "Did Dana go hiking?"))).degraded
    wide = RecallRequest("u1", "Did Dana go hiking?", max_tokens=1600)
    assert not (await failing.recall(wide)).degraded


async def test_an_explained_fill_lists_nothing_returned_as_dropped() -> None:
    request = RecallRequest("u1", "Did Dana go hiking?", max_tokens=1600, explain=True)
    result = await pipeline(ceiling_gate=True).recall(request)
    assert result.trace is not None
    returned = {m.node.id for m in result.memories}
    dropped = {d.node.id for d in result.trace.dropped}
    assert len(returned) > 1 and not returned & dropped
    # What the gate left out and the fit did not take is still said to be the gate's.
    assert any(d.stage == "gate" for d in result.trace.dropped)


async def test_a_larger_ceiling_searches_a_pool_growing_faster_than_it() -> None:
    index = SearchLimits(FakeTree(sample_tree()))
    recall = pipeline([index])
    await recall.recall(RecallRequest("u1", "Did Dana go hiking?"))
    await recall.recall(RecallRequest("u1", "Did Dana go hiking?", max_tokens=200))
    await recall.recall(RecallRequest("u1", "Did Dana go hiking?", max_tokens=800))
    # Up to the default ceiling the pool is the options'; at twice it, twice `ceiling_pool`
    # times as deep.
    pool = recall.options.leaf_pool
    assert index.limits == [pool, pool, math.ceil(pool * 2 * recall.options.ceiling_pool)]
    assert index.limits[-1] > 2 * pool
