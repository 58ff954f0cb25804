"""Recall, explained: the trace agrees with what recall returned, and costs nothing when off."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tests.unit.fakes import FakeEmbedder, FakeIndex, FakeLLM, FakeTree, sample_tree
from tests.unit.recall.test_pipeline_entities import QUERY, TARGET, pipeline, tree_with_entities

from memstream.domain.models import Level, ScoredId, SparseVector
from memstream.domain.recall_options import RecallOptions
from memstream.recall.pipeline import RecallPipeline, RecallRequest
from memstream.recall.trace import RecallTrace


class ChannelIndex(FakeIndex):
    """A dense-only search finds the first two leaves, a lexical-only one the second and
    third (a channel's own scores); the fused search is the fake's."""

    fail = False

    async def search_leaves(
        self,
        user_id: str,
        dense: Sequence[float],
        sparse: SparseVector,
        *,
        limit: int,
        dense_weight: float,
        level: Level = Level.SEGMENT,
    ) -> list[ScoredId]:
        fused = await super().search_leaves(
            user_id, dense, sparse, limit=limit, dense_weight=0.5, level=level
        )
        if dense_weight not in (0.0, 1.0):
            return fused
        if self.fail:
            raise ConnectionError("index gone")
        ids = [h.id for h in fused]
        chosen = ids[:2] if dense_weight == 1.0 else ids[1:3]
        return [ScoredId(i, 0.9 if dense_weight == 1.0 else 0.3) for i in chosen]


def build(llm: FakeLLM | None = None, index: FakeIndex | None = None) -> RecallPipeline:
    tree = FakeTree(sample_tree())
    return RecallPipeline(
        tree=tree,  # type: ignore[arg-type]
        index=index or FakeIndex(tree),
        embedder=FakeEmbedder(),
        llm=llm or FakeLLM(),
        options=RecallOptions(),
    )


async def explained(pipeline: RecallPipeline, request: RecallRequest) -> RecallTrace:
    result = await pipeline.recall(replace(request, explain=True))
    assert result.trace is not None
    return result.trace


async def test_a_plain_recall_has_no_trace_and_the_same_answer() -> None:
    pipeline = build()
    request = RecallRequest("u1", "Where did we hike last week?", complexity="complex")
    plain = await pipeline.recall(request)
    traced = await pipeline.recall(replace(request, explain=True))
    assert plain.trace is None and traced.trace is not None
    assert plain.memories == traced.memories
    assert (plain.tokens, plain.keywords, plain.complexity) == (
        traced.tokens,
        traced.keywords,
        traced.complexity,
    )


async def test_leaves_and_ancestors_agree_with_the_memories_returned() -> None:
    pipeline = build()
    request = RecallRequest("u1", "Where did we hike?", complexity="complex")
    result = await pipeline.recall(replace(request, explain=True))
    trace = result.trace
    assert trace is not None
    returned = {m.node.id for m in result.memories}
    leaves = {leaf.node.id: leaf for leaf in trace.leaves}
    climbed = {climb.node.id: climb for climb in trace.climbed}
    for memory in result.memories:
        if memory.node.level == Level.SEGMENT:
            assert leaves[memory.node.id].returned
        else:
            assert climbed[memory.node.id].returned
    assert {i for i, leaf in leaves.items() if leaf.returned} | {
        i for i, climb in climbed.items() if climb.returned
    } == returned
    # Ranks follow the re-ranked score; each ancestor names leaves of the pool below it.
    assert [leaf.rank for leaf in trace.leaves] == list(range(1, len(trace.leaves) + 1))
    scores = [leaf.rerank for leaf in trace.leaves]
    assert scores == sorted(scores, reverse=True)
    assert all(leaf.fused is not None and leaf.source != "entity" for leaf in trace.leaves)
    for climb in trace.climbed:
        assert climb.from_ids and set(climb.from_ids) <= set(leaves)
    assert trace.plan.complexity == "complex" and trace.plan.top_k > 0
    assert trace.plan.levels == tuple(int(level) for level in Level)
    assert trace.tokens == result.tokens and "total" in trace.timings_ms


async def test_what_a_stage_left_out_is_dropped_with_its_stage() -> None:
    llm = FakeLLM(gate_answer=["u1-l0000", "u1-m"])
    pipeline = build(llm)
    request = RecallRequest("u1", "q", complexity="simple", explain=True)
    result = await pipeline.recall(request)
    trace = result.trace
    assert trace is not None
    gated = {drop.node.id for drop in trace.dropped if drop.stage == "gate"}
    [offered] = llm.gated
    assert gated == set(offered) - {"u1-l0000", "u1-m"}
    assert {m.node.id for m in result.memories} <= {"u1-l0000", "u1-m"}
    ranked_out = [d for d in trace.dropped if d.stage == "top_k"]
    assert len(ranked_out) == len(trace.leaves) - trace.plan.top_k


async def test_the_token_fit_says_what_it_left_out() -> None:
    pipeline = build()
    request = RecallRequest("u1", "q", complexity="complex", max_tokens=60)
    result = await pipeline.recall(replace(request, explain=True))
    trace = result.trace
    assert trace is not None and trace.max_tokens == 60
    fitted_out = {d.node.id for d in trace.dropped if d.stage == "budget"}
    assert fitted_out
    assert not fitted_out & {m.node.id for m in result.memories}


async def test_a_leaf_the_entity_join_added_is_marked_so() -> None:
    tree = tree_with_entities()
    request = RecallRequest("u1", QUERY, complexity="simple", max_tokens=100_000)
    trace = await explained(pipeline(tree, entities=True), request)
    [joined] = [leaf for leaf in trace.leaves if leaf.node.id == TARGET]
    assert joined.source == "entity" and joined.fused is None and joined.rank == 1
    assert set(trace.plan.entities) >= {"mel", "anna"}
    assert set(joined.entities) >= {"mel", "anna"}


async def test_each_leaf_says_which_channel_found_it_and_with_what_score() -> None:
    tree = FakeTree(sample_tree())
    index = ChannelIndex(tree)
    pipeline = build(index=index)
    request = RecallRequest("u1", "q", complexity="simple")
    by_search = [
        h.id
        for h in await index.search_leaves(
            "u1", [], SparseVector((), ()), limit=3, dense_weight=0.5
        )
    ]
    trace = await explained(pipeline, request)
    leaves = {leaf.node.id: leaf for leaf in trace.leaves}
    first, second, third = (leaves[i] for i in by_search)
    assert (first.source, first.dense, first.lexical) == ("dense", 0.9, None)
    assert (second.source, second.dense, second.lexical) == ("both", 0.9, 0.3)
    assert (third.source, third.dense, third.lexical) == ("lexical", None, 0.3)
    others = [leaf for i, leaf in leaves.items() if i not in by_search]
    assert others and all(leaf.source == "fused" for leaf in others)


async def test_failed_channel_searches_leave_the_answer_and_unknown_channels() -> None:
    tree = FakeTree(sample_tree())
    index = ChannelIndex(tree)
    index.fail = True
    pipeline = build(index=index)
    request = RecallRequest("u1", "q", complexity="simple")
    plain = await pipeline.recall(request)
    traced = await pipeline.recall(replace(request, explain=True))
    assert traced.memories == plain.memories and traced.trace is not None
    assert all(leaf.dense is None and leaf.lexical is None for leaf in traced.trace.leaves)
