"""Recall with knowledge on: the facts asked for come first, memories carry their validity."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from tests.unit.fakes import FakeEmbedder, FakeIndex, FakeLLM, FakeTree
from tests.unit.fakes import leaf as quoted_leaf

from memstream.domain.fact_recall import FACT_SHARE, fact_tokens
from memstream.domain.knowledge import knowledge_change
from memstream.domain.models import Complexity, MemoryNode
from memstream.domain.query import Query
from memstream.domain.ranking import RecalledMemory
from memstream.domain.recall_options import RecallOptions
from memstream.domain.tokens import count_tokens
from memstream.ports import LanguageModel
from memstream.recall.pipeline import RecallPipeline, RecallRequest
from memstream.recall.stages import Gate

JAN_2023 = datetime(2023, 1, 14, 10, tzinfo=UTC)
APR_2024 = datetime(2024, 4, 9, 9, tzinfo=UTC)
SEP_2024 = datetime(2024, 9, 15, 11, tzinfo=UTC)
SAID = {
    "l-porto": (
        "I live in Porto, in a little flat by the river, with a loud tram outside and a bakery"
        " downstairs that makes up for it every single morning, and the neighbours are kind"
        " and quiet, and the view of the river at night is worth every cent of the rent.",
        JAN_2023,
    ),
    "l-berlin": ("I live in Berlin now, the contract has eleven pages.", APR_2024),
    "l-trip": ("Any idea for a weekend trip by train?", SEP_2024),
}


# Said between the two versions, in words no fact is read from.
UNSTATED = {
    "l-tram": ("The tram woke me at five again, I need earplugs.", JAN_2023 + timedelta(days=90))
}
# The move to Berlin told in words the question does not share.
MOVED = {"l-moved": ("We moved to Berlin last week, boxes everywhere.", APR_2024)}


def leaf(node_id: str) -> MemoryNode:
    text, when = {**SAID, **UNSTATED, **MOVED}[node_id]
    return said_by_maya(node_id, text, when)


async def keep_all(
    llm: LanguageModel, query: Query, complexity: Complexity, candidates: list[RecalledMemory]
) -> tuple[list[RecalledMemory], bool]:
    return candidates, False


def build(
    knowledge: bool = True, scores: dict[str, float] | None = None, extra: tuple[str, ...] = ()
) -> RecallPipeline:
    leaves = [leaf(node_id) for node_id in (*SAID, *extra)]
    tree = FakeTree(leaves)
    tree._apply_knowledge("u1", knowledge_change(leaves))
    # The index ranks the stale Porto leaf first, as dense search may.
    ranked = scores or {"l-porto": 0.9, "l-trip": 0.6, "l-berlin": 0.5}
    return pipeline_over(tree, ranked, knowledge=tree if knowledge else None)


def pipeline_over(
    tree: FakeTree,
    scores: dict[str, float],
    *,
    gate: Gate = keep_all,
    knowledge: FakeTree | None = None,
) -> RecallPipeline:
    """Recall over `tree` with the index ranking by `scores`, a ceiling out of the way."""
    return RecallPipeline(
        tree=tree,  # type: ignore[arg-type]
        index=FakeIndex(tree, scores=scores),
        embedder=FakeEmbedder(),
        llm=FakeLLM(),
        options=replace(RecallOptions(), default_max_tokens=10_000),
        gate=gate,
        knowledge=knowledge,
    )


def ask(query: str, at: datetime = SEP_2024, max_tokens: int | None = None) -> RecallRequest:
    return RecallRequest("u1", query, query_time=at, complexity="simple", max_tokens=max_tokens)


async def test_a_question_about_now_gets_the_current_fact_first_counted_in_its_tokens() -> None:
    result = await build().recall(ask("Where does Maya live these days?"))
    assert [f.text for f in result.facts] == ["Maya lives in Berlin"]
    assert result.facts[0].valid_to is None
    memory_tokens = sum(count_tokens(m.node.text) for m in result.memories)
    assert result.tokens == memory_tokens + fact_tokens(result.facts[0])


async def test_each_memory_carries_its_validity_on_the_asked_slot() -> None:
    result = await build().recall(ask("Where does Maya live these days?"))
    validity = {m.node.id: m.validity for m in result.memories}
    porto, berlin = validity["l-porto"], validity["l-berlin"]
    assert porto is not None and porto.valid_to == APR_2024 and porto.superseded_by
    assert berlin is not None and berlin.holds_now
    assert validity["l-trip"] is None  # it states nothing about where she lives


async def test_a_leaf_with_only_a_superseded_value_does_not_outrank_the_current_one() -> None:
    result = await build().recall(ask("Where does Maya live these days?"))
    order = [m.node.id for m in result.memories]
    assert order.index("l-berlin") < order.index("l-porto")
    # With room for one leaf beside the fact, the current one is kept, not the stale one.
    scores = {"l-porto": 0.9, "l-berlin": 0.5, "l-trip": 0.1}
    focused_share = RecallOptions().focused_share
    fact, berlin = fact_tokens(result.facts[0]), count_tokens(leaf("l-berlin").text)
    budget = max(int(fact / FACT_SHARE) + 1, fact + berlin + 1)
    assert budget - fact < berlin + count_tokens(leaf("l-porto").text)  # room for one leaf
    tight = await build(scores=scores).recall(
        ask("Where does Maya live these days?", max_tokens=int(budget / focused_share) + 1)
    )
    kept = [m.node.id for m in tight.memories]
    assert "l-berlin" in kept and "l-porto" not in kept


async def test_a_memory_said_before_the_change_is_closed_by_it_and_first_for_before() -> None:
    scores = {"l-tram": 0.95, "l-porto": 0.9, "l-trip": 0.6, "l-berlin": 0.5}
    pipeline = build(scores=scores, extra=("l-tram",))
    now = await pipeline.recall(ask("Where does Maya live these days?"))
    tram = next(m for m in now.memories if m.node.id == "l-tram")
    assert tram.validity is not None and tram.validity.valid_to == APR_2024
    assert tram.validity.superseded_by == now.facts[0].fact_id  # what replaced it: Berlin
    order = [m.node.id for m in now.memories]
    assert order.index("l-berlin") < order.index("l-tram")
    # Asked what held before Berlin, the words said before it are the answer: they come
    # first, nearest the change first, and the current value, not true yet then, comes last.
    before = await pipeline.recall(ask("Which city did Maya live in before Berlin?"))
    assert [m.node.id for m in before.memories] == ["l-tram", "l-porto", "l-trip", "l-berlin"]


async def test_before_a_change_the_memories_date_what_ended_by_then_is_not_put_last() -> None:
    # "the trip" is first named in September: what was said before it comes first, nearest
    # it first, the Porto leaves too though Berlin had replaced them by then; what was said
    # at the change comes last.
    pipeline = build(extra=("l-tram",))
    before = await pipeline.recall(ask("Which city did Maya live in before the trip?"))
    assert [m.node.id for m in before.memories] == ["l-berlin", "l-tram", "l-porto", "l-trip"]


async def test_asked_in_the_past_the_value_true_then_comes_first() -> None:
    result = await build().recall(ask("Where does Maya live?", at=datetime(2023, 6, 1, tzinfo=UTC)))
    assert [f.text for f in result.facts] == ["Maya lives in Porto"]
    assert result.facts[0].valid_to == APR_2024  # as known today: Berlin replaced it


async def test_asked_about_a_past_time_what_was_said_by_then_comes_before_what_came_after() -> None:
    scores = {"l-tram": 0.95, "l-porto": 0.9, "l-trip": 0.6, "l-berlin": 0.5}
    pipeline = build(scores=scores, extra=("l-tram",))
    result = await pipeline.recall(ask("Where did Maya live in June 2023?"))
    # Nearest the asked time first among what was said by the end of June 2023; the trip,
    # said later, after them though it is the newest; Berlin, not yet true then, last.
    assert [m.node.id for m in result.memories] == ["l-tram", "l-porto", "l-trip", "l-berlin"]


async def drop_porto(
    llm: LanguageModel, query: Query, complexity: Complexity, candidates: list[RecalledMemory]
) -> tuple[list[RecalledMemory], bool]:
    """A gate that finds the Porto leaf irrelevant to the question."""
    return [m for m in candidates if m.node.id != "l-porto"], False


async def test_asked_about_a_past_time_what_the_person_said_just_before_it_joins() -> None:
    # The gate leaves Porto out, as a gate may for words the question does not share. Said
    # by Maya before the end of the time asked about, and the last thing she said by then,
    # it joins again.
    pipeline = build()
    pipeline._gate = drop_porto
    result = await pipeline.recall(ask("Where was Maya in March 2023?"))
    assert result.memories[0].node.id == "l-porto"


async def test_a_question_about_before_gets_the_replaced_value_first() -> None:
    result = await build().recall(ask("Which city did Maya live in before Berlin?"))
    assert [f.text for f in result.facts] == ["Maya lives in Porto", "Maya lives in Berlin"]


async def test_without_knowledge_recall_returns_no_fact_and_no_validity() -> None:
    result = await build(knowledge=False).recall(ask("Where does Maya live these days?"))
    assert result.facts == []
    assert all(m.validity is None for m in result.memories)
    assert "facts" not in result.timings_ms
    assert result.memories[0].node.id == "l-trip"  # the newest first, as before


class CountingReads:
    """The fake store's knowledge reads, counted by name."""

    def __init__(self, tree: FakeTree) -> None:
        self.tree = tree
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> object:
        self.calls.append(name)
        return getattr(self.tree, name)


async def counted(query: str) -> list[str]:
    leaves = [leaf(node_id) for node_id in SAID]
    tree = FakeTree(leaves)
    tree._apply_knowledge("u1", knowledge_change(leaves))
    reads = CountingReads(tree)
    pipeline = RecallPipeline(
        tree=tree,  # type: ignore[arg-type]
        index=FakeIndex(tree),
        embedder=FakeEmbedder(),
        llm=FakeLLM(),
        options=RecallOptions(),
        gate=keep_all,
        knowledge=reads,  # type: ignore[arg-type]
    )
    await pipeline.recall(ask(query))
    return reads.calls


async def test_the_index_is_read_once_and_facts_only_for_a_question_about_a_state() -> None:
    # The heatmap reads the entity index for every question; the facts stage shares that read.
    assert await counted("Where did Maya go by train?") == ["entity_index"]  # no state
    assert await counted("What does Maya think of jazz?") == ["entity_index", "facts"]
    assert sorted(await counted("Where does Maya live?")) == [
        "entity_index",
        "fact_history",
        "facts",
    ]


async def test_the_leaf_a_returned_fact_was_read_from_passes_a_gate_that_left_it_out() -> None:
    # The gate keeps leaves by the question's words; the move was told in others.
    tree_leaves = [leaf("l-porto"), leaf("l-trip"), leaf("l-moved")]
    tree = FakeTree(tree_leaves)
    tree._apply_knowledge("u1", knowledge_change(tree_leaves))

    async def by_words(
        llm: LanguageModel, query: Query, complexity: Complexity, candidates: list[RecalledMemory]
    ) -> tuple[list[RecalledMemory], bool]:
        return [m for m in candidates if "live" in m.node.text], False

    scores = {"l-porto": 0.9, "l-trip": 0.6, "l-moved": 0.3}
    pipeline = pipeline_over(tree, scores, gate=by_words, knowledge=tree)
    result = await pipeline.recall(ask("Where does Maya live these days?"))
    assert [f.value for f in result.facts] == ["Berlin"]
    order = [m.node.id for m in result.memories]
    assert order[0] == "l-moved" and "l-trip" not in order


def said_by_maya(node_id: str, text: str, when: datetime) -> MemoryNode:
    return replace(quoted_leaf(node_id, text, at=when, speaker="Maya"), speakers=("Maya",))


async def test_with_no_fact_the_newest_strong_statement_joins_and_closes_the_older() -> None:
    # The gate keeps the old leaf for the word "sport"; the search ranked the regatta high.
    old = said_by_maya("l-hurley", "No contact sport for me ever again.", JAN_2023)
    new = said_by_maya("l-regatta", "We won our first regatta at Islandbridge!", APR_2024)
    tree = FakeTree([old, new])

    async def by_words(
        llm: LanguageModel, query: Query, complexity: Complexity, candidates: list[RecalledMemory]
    ) -> tuple[list[RecalledMemory], bool]:
        return [m for m in candidates if "sport" in m.node.text], False

    pipeline = pipeline_over(tree, {"l-hurley": 0.9, "l-regatta": 0.5}, gate=by_words)
    now = await pipeline.recall(ask("What sport does Maya do now?"))
    assert [m.node.id for m in now.memories] == ["l-regatta", "l-hurley"]
    assert now.memories[1].validity is not None
    assert now.memories[1].validity.valid_to == new.t_start
    # A question about no state, or about a past time, is left as the gate made it.
    for question in ("What sport did Maya play?", "What sport did Maya do in March 2023?"):
        other = await pipeline.recall(ask(question))
        assert [m.node.id for m in other.memories] == ["l-hurley"]
