"""The recall pipeline over in-memory stores: budgets, climbing, gating, tokens, order."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

import pytest
from tests.unit.fakes import BASE, FakeEmbedder, FakeIndex, FakeLLM, FakeTree, sample_tree

from memstream.domain.models import Complexity, Level
from memstream.domain.query import Query
from memstream.domain.ranking import RecalledMemory
from memstream.domain.recall_options import DEFAULT_BUDGETS, RecallOptions
from memstream.domain.summary_trim import fit_without_repeats
from memstream.domain.tokens import count_tokens
from memstream.ports import LanguageModel
from memstream.recall.pipeline import RecallPipeline, RecallRequest, RecallResult
from memstream.recall.stages import Fit, Gate, fit_in_place_of_leaves, gate_by_model


def fit_beside_leaves(
    query: Query, memories: Sequence[RecalledMemory], max_tokens: int, summary_share: float
) -> tuple[list[RecalledMemory], int]:
    """The shipped fit, but summaries are added to the leaves rather than put in their place."""
    return fit_without_repeats(memories, max_tokens, summary_share, query, query.asks_when)


def build(
    tree: FakeTree | None = None,
    llm: FakeLLM | None = None,
    index: FakeIndex | None = None,
    embedder: FakeEmbedder | None = None,
    options: RecallOptions | None = None,
    gate: Gate = gate_by_model,
) -> tuple[RecallPipeline, FakeTree, FakeLLM]:
    tree = tree or FakeTree(sample_tree())
    llm = llm or FakeLLM()
    pipeline = RecallPipeline(
        tree=tree,  # type: ignore[arg-type]
        index=index or FakeIndex(tree),
        embedder=embedder or FakeEmbedder(),
        llm=llm,
        # A ceiling nothing reaches, and summaries added to the leaves rather than in their
        # place, so these tests see climbing, pruning and gating whole; the token rules have
        # tests of their own.
        options=replace(options or RecallOptions(), default_max_tokens=100_000),
        fit=fit_beside_leaves,
        gate=gate,
    )
    return pipeline, tree, llm


def per_level(result: RecallResult) -> dict[Level, int]:
    counts: dict[Level, int] = {}
    for m in result.memories:
        counts[m.node.level] = counts.get(m.node.level, 0) + 1
    return counts


@pytest.mark.parametrize("complexity", ["simple", "hybrid", "complex"])
async def test_each_complexity_recalls_its_levels_within_budget(complexity: str) -> None:
    pipeline, _, _ = build()
    result = await pipeline.recall(RecallRequest("u1", "what happened", complexity=complexity))  # type: ignore[arg-type]
    budgets = DEFAULT_BUDGETS[complexity]  # type: ignore[index]
    counts = per_level(result)
    assert set(counts) == set(budgets)  # the sample tree has enough of every level
    assert all(counts[level] <= budgets[level] for level in counts)
    assert result.complexity == complexity
    assert not result.degraded


async def test_ancestors_are_scored_by_their_best_leaf_and_pruned() -> None:
    tree = FakeTree(sample_tree())
    # Leaves of session s110 score highest, then one leaf of s000; every other leaf is low.
    scores = {f"u1-l110{i}": 0.9 - 0.01 * i for i in range(3)} | {"u1-l0000": 0.8}
    index = FakeIndex(tree, scores={**dict.fromkeys((i for _, i in tree.nodes), 0.1), **scores})
    pipeline, _, _ = build(tree=tree, index=index, options=RecallOptions(leaf_top_k=4))
    result = await pipeline.recall(RecallRequest("u1", "q", complexity="complex"))
    sessions = [m for m in result.memories if m.node.level == Level.SESSION]
    assert {m.node.id: m.score for m in sessions} == {"u1-s110": 0.9, "u1-s000": 0.8}
    weeks = {m.node.id: m.score for m in result.memories if m.node.level == Level.WEEK}
    assert weeks == {"u1-w1": 0.9, "u1-w0": 0.8}


async def test_sum_scoring_favours_ancestors_with_more_recalled_leaves() -> None:
    tree = FakeTree(sample_tree())
    scores = {"u1-l0000": 0.9, "u1-l1000": 0.5, "u1-l1001": 0.5}
    index = FakeIndex(tree, scores={**dict.fromkeys((i for _, i in tree.nodes), 0.0), **scores})
    options = RecallOptions(leaf_top_k=3, ancestor_scoring="sum")
    pipeline, _, _ = build(tree=tree, index=index, options=options)
    result = await pipeline.recall(RecallRequest("u1", "q", complexity="complex"))
    weeks = sorted((m.score, m.node.id) for m in result.memories if m.node.level == Level.WEEK)
    assert weeks == [(0.9, "u1-w0"), (1.0, "u1-w1")]


async def test_ancestors_are_read_in_one_batch_after_the_sessions_terms() -> None:
    pipeline, tree, _ = build()
    await pipeline.recall(RecallRequest("u1", "q", complexity="complex"))
    # The leaves, then L2 to L5 above the leaves kept; the sessions above the pool are read
    # for their terms alone (the summary signal), in one read.
    assert tree.get_many_calls == 2
    assert tree.session_terms_calls == 1


async def test_without_the_summary_signal_ancestors_are_read_in_one_batch() -> None:
    pipeline, tree, _ = build(options=RecallOptions(summary_signal=0.0))
    await pipeline.recall(RecallRequest("u1", "q", complexity="complex"))
    assert tree.get_many_calls == 2  # the leaves, then L2 to L5 above the leaves kept
    assert tree.session_terms_calls == 0


async def test_only_the_kept_leaves_ancestors_are_read() -> None:
    tree = FakeTree(sample_tree())
    scores = {"u1-l0000": 0.9, "u1-l0001": 0.8}  # both in session s000, day d00, week w0
    index = FakeIndex(tree, scores={**dict.fromkeys((i for _, i in tree.nodes), 0.1), **scores})
    pipeline, _, _ = build(tree=tree, index=index, options=RecallOptions(leaf_top_k=2))
    await pipeline.recall(RecallRequest("u1", "q", complexity="complex"))
    read = set(tree.read_ids)
    # The whole pool's sessions are read for their terms, not as nodes.
    assert {i for i in read if i.startswith(("u1-s", "u1-d", "u1-w"))} == {
        "u1-s000",
        "u1-d00",
        "u1-w0",
    }


async def test_a_live_sessions_unwritten_summary_is_not_read_again() -> None:
    # Session s110 is still open: its leaves name the summary its end will write.
    tree = FakeTree([n for n in sample_tree() if n.id != "u1-s110"])
    scores = {f"u1-l110{i}": 0.9 - 0.01 * i for i in range(3)}
    index = FakeIndex(tree, scores={**dict.fromkeys((i for _, i in tree.nodes), 0.1), **scores})
    pipeline, _, _ = build(tree=tree, index=index, options=RecallOptions(leaf_top_k=3))
    result = await pipeline.recall(RecallRequest("u1", "q", complexity="complex"))
    assert {m.node.id for m in result.memories if m.node.level == Level.SEGMENT} == {
        "u1-l1100",
        "u1-l1101",
        "u1-l1102",
    }
    # Its terms were asked once (not there); no read of its node or ancestors follows.
    assert tree.session_terms_calls == 1
    assert tree.get_many_calls == 1  # the leaves


async def test_kept_leaves_under_written_and_unwritten_sessions_climb_from_the_written() -> None:
    tree = FakeTree([n for n in sample_tree() if n.id != "u1-s110"])
    scores = {"u1-l1100": 0.9, "u1-l0000": 0.8}
    index = FakeIndex(tree, scores={**dict.fromkeys((i for _, i in tree.nodes), 0.1), **scores})
    pipeline, _, _ = build(tree=tree, index=index, options=RecallOptions(leaf_top_k=2))
    result = await pipeline.recall(RecallRequest("u1", "q", complexity="complex"))
    above = {m.node.id for m in result.memories if m.node.level > Level.SEGMENT}
    assert {"u1-s000", "u1-d00", "u1-w0", "u1-m"} <= above
    assert tree.get_many_calls == 2  # the leaves, then the written session's lineage


async def test_simple_queries_stop_climbing_at_the_profile_and_skip_days_and_weeks() -> None:
    pipeline, _, _ = build()
    result = await pipeline.recall(RecallRequest("u1", "q", complexity="simple"))
    assert {m.node.level for m in result.memories} == {Level.SEGMENT, Level.SESSION, Level.MONTH}


async def test_latest_profile_stands_in_when_no_path_reaches_one() -> None:
    # Leaves whose session is still open: their parent does not exist yet.
    tree = FakeTree([n for n in sample_tree() if n.level in (Level.SEGMENT, Level.MONTH)])
    pipeline, _, _ = build(tree=tree)
    result = await pipeline.recall(RecallRequest("u1", "q", complexity="simple"))
    profiles = [m for m in result.memories if m.node.level == Level.MONTH]
    assert [(p.node.id, p.score) for p in profiles] == [("u1-m", 0.0)]


async def test_planner_runs_concurrently_with_leaf_activation() -> None:
    llm = FakeLLM(complexity="hybrid", plan_delay_s=0.3)
    tree = FakeTree(sample_tree())
    pipeline, _, _ = build(
        tree=tree, llm=llm, index=FakeIndex(tree, delay_s=0.15), embedder=FakeEmbedder(0.15)
    )
    start = time.perf_counter()
    result = await pipeline.recall(RecallRequest("u1", "q"))
    elapsed = time.perf_counter() - start
    assert result.complexity == "hybrid" and result.keywords == ("llm",)
    assert elapsed < 0.5  # sequential would take 0.6 s
    for stage in ("plan", "embed", "search", "leaves", "ancestors", "gate", "order", "total"):
        assert stage in result.timings_ms
    assert result.timings_ms["plan"] >= 290


async def test_a_forced_complexity_skips_the_llm_planner() -> None:
    pipeline, _, llm = build(llm=FakeLLM(complexity="complex"))
    result = await pipeline.recall(RecallRequest("u1", "Where did Ana hike?", complexity="simple"))
    assert llm.plans == 0
    assert result.complexity == "simple"
    assert "hike" in result.keywords


@pytest.mark.parametrize("answer", [None, "raise"])
async def test_a_failed_gate_returns_the_ungated_set_marked_degraded(answer: object) -> None:
    pipeline, _, llm = build(llm=FakeLLM(gate_answer=answer))  # type: ignore[arg-type]
    result = await pipeline.recall(RecallRequest("u1", "q", complexity="simple"))
    assert result.degraded
    assert sorted(m.node.id for m in result.memories) == sorted(llm.gated[0])


async def test_the_gate_removes_what_it_does_not_keep() -> None:
    pipeline, _, _ = build(llm=FakeLLM(gate_answer=["u1-l0000", "u1-m", "not-a-candidate"]))
    result = await pipeline.recall(RecallRequest("u1", "q", complexity="simple"))
    assert [m.node.id for m in result.memories] == ["u1-l0000", "u1-m"]
    assert not result.degraded


async def test_the_gate_can_be_replaced_for_ablations() -> None:
    llm = FakeLLM(gate_answer=[])

    async def keep_all(
        llm: LanguageModel, query: Query, complexity: Complexity, found: list[RecalledMemory]
    ) -> tuple[list[RecalledMemory], bool]:
        return found, False

    pipeline, _, _ = build(llm=llm, gate=keep_all)
    result = await pipeline.recall(RecallRequest("u1", "q", complexity="simple"))
    assert result.memories and not llm.gated


async def test_max_tokens_is_a_ceiling_that_leaves_out_only_what_no_longer_fits() -> None:
    pipeline, _, _ = build()
    full = await pipeline.recall(RecallRequest("u1", "q", complexity="complex"))
    ceiling = full.tokens // 2
    cut = await pipeline.recall(RecallRequest("u1", "q", complexity="complex", max_tokens=ceiling))
    # "q" asks for one fact: it spends the focused share of the ceiling.
    spent = pipeline.options.token_budget(ceiling, aggregative=False)
    assert 0 < cut.tokens <= spent < ceiling
    assert cut.tokens == sum(count_tokens(m.node.text) for m in cut.memories)
    kept = {m.node.id for m in cut.memories}
    for left_out in (m for m in full.memories if m.node.id not in kept):
        assert cut.tokens + count_tokens(left_out.node.text) > spent
    nothing = await pipeline.recall(RecallRequest("u1", "q", max_tokens=0))
    assert nothing.memories == [] and nothing.tokens == 0


async def test_a_request_without_max_tokens_gets_the_options_ceiling() -> None:
    pipeline, tree, llm = build()
    full = await pipeline.recall(RecallRequest("u1", "q", complexity="complex"))
    ceiling = full.tokens // 2
    capped = RecallPipeline(
        tree=tree,  # type: ignore[arg-type]
        index=FakeIndex(tree),
        embedder=FakeEmbedder(),
        llm=llm,
        options=RecallOptions(default_max_tokens=ceiling),
    )
    default = await capped.recall(RecallRequest("u1", "q", complexity="complex"))
    explicit = await capped.recall(
        RecallRequest("u1", "q", complexity="complex", max_tokens=ceiling)
    )
    assert 0 < default.tokens < full.tokens
    assert default.memories == explicit.memories


async def test_questions_that_gather_facts_may_spend_the_whole_ceiling() -> None:
    pipeline, _, _ = build()
    full = await pipeline.recall(RecallRequest("u1", "q", complexity="complex"))
    ceiling = full.tokens // 2
    gathering = "How many times did they meet?"
    wide = await pipeline.recall(
        RecallRequest("u1", gathering, complexity="complex", max_tokens=ceiling)
    )
    focused = await pipeline.recall(
        RecallRequest("u1", "q", complexity="complex", max_tokens=ceiling)
    )
    assert focused.tokens < wide.tokens <= ceiling


async def test_memories_are_ordered_by_level_then_distance_to_the_query_time() -> None:
    pipeline, _, _ = build()
    asked = BASE + timedelta(days=8)
    result = await pipeline.recall(RecallRequest("u1", "q", query_time=asked, complexity="complex"))
    keys = [
        (int(m.node.level), abs((m.node.t_end - asked).total_seconds())) for m in result.memories
    ]
    assert keys == sorted(keys)


async def test_other_users_never_come_back_even_from_a_leaking_index() -> None:
    tree = FakeTree(sample_tree("u1") + sample_tree("u2"))
    index = FakeIndex(tree)
    from memstream.domain.models import ScoredId

    index.leak = [ScoredId("u2-l0000", 0.99)]
    pipeline, _, _ = build(tree=tree, index=index)
    result = await pipeline.recall(RecallRequest("u1", "q", complexity="complex"))
    assert result.memories and all(m.node.user_id == "u1" for m in result.memories)


async def test_an_unknown_user_gets_an_empty_result() -> None:
    pipeline, _, _ = build()
    result = await pipeline.recall(RecallRequest("nobody", "q"))
    assert result.memories == [] and result.tokens == 0 and not result.degraded


def test_requests_reject_bad_values() -> None:
    with pytest.raises(ValueError):
        RecallRequest("u1", "q", complexity="everything")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        RecallRequest("u1", "q", max_tokens=-1)
    with pytest.raises(ValueError):
        RecallOptions(dense_weight=1.5)


def test_the_sample_tree_is_sound() -> None:
    from tests.unit.tree_audit import check_containment

    assert check_containment(sample_tree()) == []


async def test_a_failing_search_cancels_the_planner_and_propagates() -> None:
    tree = FakeTree(sample_tree())
    index = FakeIndex(tree)

    async def broken(*args: object, **kwargs: object) -> None:
        raise ConnectionError("qdrant unreachable")

    index.search_leaves = broken  # type: ignore[method-assign]
    pipeline, _, _ = build(tree=tree, index=index, llm=FakeLLM(plan_delay_s=5.0))
    start = time.perf_counter()
    with pytest.raises(ConnectionError):
        await pipeline.recall(RecallRequest("u1", "q"))
    assert time.perf_counter() - start < 1.0


async def test_summaries_take_the_place_of_leaves_never_more_tokens() -> None:
    def recall_with(options: RecallOptions, fit: Fit = fit_in_place_of_leaves) -> RecallPipeline:
        tree = FakeTree(sample_tree())
        return RecallPipeline(
            tree=tree,  # type: ignore[arg-type]
            index=FakeIndex(tree),
            embedder=FakeEmbedder(),
            llm=FakeLLM(),
            options=options,
            fit=fit,
        )

    leaves_only = {c: {Level.SEGMENT: 35} for c in DEFAULT_BUDGETS}
    for complexity in DEFAULT_BUDGETS:
        request = RecallRequest("u1", "what happened", complexity=complexity)
        adding = await recall_with(RecallOptions(), fit_beside_leaves).recall(request)
        replacing = await recall_with(RecallOptions()).recall(request)
        leaves = await recall_with(RecallOptions(budgets=leaves_only)).recall(request)
        assert any(m.node.level is not Level.SEGMENT for m in replacing.memories)
        assert replacing.tokens <= leaves.tokens < adding.tokens
