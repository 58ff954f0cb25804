"""Through the pipeline: for a question gathering facts, what the gate left out fills what
the memories it kept leave of the budget, at the default ceiling too, after them; a question
after one fact gets what the gate kept alone."""

from __future__ import annotations

from tests.unit.fakes import FakeEmbedder, FakeIndex, FakeLLM, FakeTree, sample_tree

from memstream.domain.models import Level
from memstream.domain.recall_options import RecallOptions
from memstream.domain.tokens import count_tokens
from memstream.recall.pipeline import RecallPipeline, RecallRequest, RecallResult

# The gate keeps one leaf, not the search's best (leaves score less in insertion order).
KEPT = "u1-l0011"
GATHERING = "What activities did Dana do?"  # gathers facts: the whole ceiling
ONE_FACT = "Did Dana go hiking?"


def pipeline(gate_fill: bool = True) -> RecallPipeline:
    tree = FakeTree(sample_tree())
    options = RecallOptions(leaf_top_k=6, leaf_pool=6, gate_fill=gate_fill)
    return RecallPipeline(
        tree=tree,  # type: ignore[arg-type]
        index=FakeIndex(tree),
        embedder=FakeEmbedder(),
        llm=FakeLLM(gate_answer=[KEPT]),
        options=options,
    )


def leaves(result: RecallResult) -> list[str]:
    return [m.node.id for m in result.memories if m.node.level is Level.SEGMENT]


async def test_what_the_gate_left_out_fills_the_default_budget_of_a_gathering_question() -> None:
    filled = await pipeline().recall(RecallRequest("u1", GATHERING))
    gated = await pipeline(gate_fill=False).recall(RecallRequest("u1", GATHERING))
    assert leaves(gated) == [KEPT]
    assert KEPT in leaves(filled) and len(leaves(filled)) > 1
    assert gated.tokens < filled.tokens <= RecallOptions().default_max_tokens
    assert filled.tokens == sum(count_tokens(m.node.text) for m in filled.memories)


async def test_a_question_after_one_fact_gets_what_the_gate_kept() -> None:
    result = await pipeline().recall(RecallRequest("u1", ONE_FACT))
    assert leaves(result) == [KEPT]


async def test_the_fill_never_takes_the_place_of_what_the_gate_kept() -> None:
    gated = await pipeline(gate_fill=False).recall(RecallRequest("u1", GATHERING))
    [kept] = [m.node for m in gated.memories if m.node.id == KEPT]
    # A ceiling that holds one leaf: the gate's, though the search ranked others above it.
    request = RecallRequest("u1", GATHERING, max_tokens=count_tokens(kept.text) + 1)
    result = await pipeline().recall(request)
    assert leaves(result) == [KEPT]
