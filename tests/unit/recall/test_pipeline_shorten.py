"""Through the pipeline: a question gathering facts gets its leaves past the best few as
excerpts; so does a question after one fact, past its own (fewer) best whole leaves."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.fakes import FakeEmbedder, FakeIndex, FakeLLM, FakeTree, sample_tree

from memstream.domain.models import Level
from memstream.domain.recall_options import RecallOptions
from memstream.domain.tokens import count_tokens
from memstream.recall.pipeline import RecallPipeline, RecallRequest

LONG = (
    "We spent the whole weekend at the lake with the kids and the dog. "
    "I finally tried kayaking and loved it. "
    "The weather was perfect and we grilled fish every evening by the water."
)


def pipeline(whole: int, focused: int = 0, focused_whole: int = 0) -> RecallPipeline:
    nodes = [
        replace(n, text=f"{i} May 2023, Dana: {LONG}") if n.level is Level.SEGMENT else n
        for i, n in enumerate(sample_tree())
    ]
    tree = FakeTree(nodes)
    options = RecallOptions(
        aggregate_leaf_tokens=32,
        aggregate_whole_leaves=whole,
        focused_leaf_tokens=focused,
        focused_whole_leaves=focused_whole,
    )
    return RecallPipeline(
        tree=tree,  # type: ignore[arg-type]
        index=FakeIndex(tree),
        embedder=FakeEmbedder(),
        llm=FakeLLM(),
        options=replace(options, default_max_tokens=100_000),
    )


async def test_a_gathering_question_gets_its_best_leaves_whole_and_the_rest_cut() -> None:
    result = await pipeline(whole=3).recall(RecallRequest("u1", "What sports has Dana tried?"))
    leaves = [m for m in result.memories if m.node.level is Level.SEGMENT]
    whole = [m for m in leaves if not m.excerpt]
    assert len(leaves) > 10 and len(whole) == 3
    assert all(count_tokens(m.node.text) <= 32 for m in leaves if m.excerpt)
    assert min(m.score for m in whole) >= max(m.score for m in leaves if m.excerpt)


async def test_a_question_after_one_fact_gets_every_leaf_whole_with_focused_cuts_off() -> None:
    result = await pipeline(whole=0).recall(RecallRequest("u1", "Did Dana try kayaking?"))
    leaves = [m for m in result.memories if m.node.level is Level.SEGMENT]
    assert leaves and not any(m.excerpt for m in leaves)


async def test_a_question_after_one_fact_gets_its_best_leaves_whole_and_the_rest_cut() -> None:
    request = RecallRequest("u1", "Did Dana try kayaking?")
    result = await pipeline(whole=0, focused=32, focused_whole=2).recall(request)
    leaves = [m for m in result.memories if m.node.level is Level.SEGMENT]
    whole = [m for m in leaves if not m.excerpt]
    assert len(whole) == 2 and len(leaves) > 2
    assert all(count_tokens(m.node.text) <= 32 for m in leaves if m.excerpt)
    assert min(m.score for m in whole) >= max(m.score for m in leaves if m.excerpt)
