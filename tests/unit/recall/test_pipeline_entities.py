"""Recall with the entity index: leaves of the entities a query names join the pool, and a
leaf naming several of them is lifted; without the index, recall is as before."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from tests.unit.fakes import (
    BASE,
    CountedLeaves,
    FakeEmbedder,
    FakeIndex,
    FakeLLM,
    FakeTree,
    node,
    sample_tree,
)

from memstream.contracts.knowledge_codec import encode_leaf_entities
from memstream.domain.entity_index import build, read_leaf
from memstream.domain.models import Level
from memstream.domain.query import parse_query
from memstream.domain.ranking import RecalledMemory
from memstream.domain.recall_options import RecallOptions
from memstream.recall.entities import join_entity_leaves
from memstream.recall.pipeline import RecallPipeline, RecallRequest

QUERY = "What did Mel and Anna bake?"
TARGET = "u1-l1102"  # the one leaf naming both; the search ranks it last


@dataclass(frozen=True)
class Said:
    speaker: str
    text: str
    ts: datetime = BASE


def tree_with_entities() -> FakeTree:
    tree = FakeTree(sample_tree())
    leaves = [n.id for (u, _), n in tree.nodes.items() if u == "u1" and n.level == Level.SEGMENT]
    docs = {i: [Said("Mel", "I went for a long walk today.")] for i in leaves}
    docs[TARGET] = [Said("Mel", "I baked bread with Anna yesterday.")]
    tree.leaf_entities["u1"] = {
        i: json.dumps(encode_leaf_entities(read_leaf(said))) for i, said in docs.items()
    }
    return tree


def pipeline(tree: FakeTree, *, entities: bool, **options: object) -> RecallPipeline:
    leaves = [n.id for (u, _), n in tree.nodes.items() if u == "u1" and n.level == Level.SEGMENT]
    scores = {i: 0.5 - 0.01 * k for k, i in enumerate(sorted(leaves))} | {TARGET: 0.01}
    return RecallPipeline(
        tree=tree,  # type: ignore[arg-type]
        index=FakeIndex(tree, scores=scores),
        embedder=FakeEmbedder(),
        llm=FakeLLM(),
        options=replace(
            # The budget no constraint, at the default ceiling: no count grows with it.
            RecallOptions(leaf_pool=5, leaf_top_k=5, speaker_boost=0.0, default_max_tokens=100_000),
            **options,  # type: ignore[arg-type]
        ),
        knowledge=tree if entities else None,
    )


def leaf_ids(memories: list) -> list[str]:  # type: ignore[type-arg]
    return [m.node.id for m in memories if m.node.level == Level.SEGMENT]


async def test_a_leaf_naming_both_entities_joins_the_pool_and_ranks_first() -> None:
    tree = tree_with_entities()
    request = RecallRequest("u1", QUERY, complexity="simple", max_tokens=100_000)
    reads = tree.get_many_calls
    without = await pipeline(tree, entities=False).recall(request)
    reads_without, reads = tree.get_many_calls - reads, tree.get_many_calls
    assert TARGET not in leaf_ids(without.memories)
    found = await pipeline(tree, entities=True).recall(request)
    best = max((m for m in found.memories if m.node.level == Level.SEGMENT), key=lambda m: m.score)
    assert best.node.id == TARGET
    # The joined leaves cost one read (one MGET), whatever their number.
    assert tree.get_many_calls - reads == reads_without + 1
    assert "entity_index" in found.timings_ms


async def test_the_join_can_be_switched_off() -> None:
    tree = tree_with_entities()
    request = RecallRequest("u1", QUERY, complexity="simple", max_tokens=100_000)
    result = await pipeline(tree, entities=True, entity_join=0).recall(request)
    assert TARGET not in leaf_ids(result.memories)


async def test_the_join_reads_a_bounded_part_of_a_history_naming_a_friend_in_thousands() -> None:
    # A heavy user's friend Nate, named in 5,000 leaves, one in fifty with Anna: the join
    # reads no leaf of the index but the pool's, and only the newest shared leaves from the
    # tree, in one read; dating every leaf of each entity named was most of such a recall.
    said = {
        f"n{i:04}": read_leaf([Said("Mel", _nate_or_both(i), BASE + timedelta(hours=i))])
        for i in range(5_000)
    }
    index = replace(build(said), leaves=CountedLeaves(said))
    nodes = [node("u1", i, Level.SEGMENT, BASE, BASE, None) for i in said]
    tree = FakeTree(nodes)
    pool = [RecalledMemory(n, 0.5) for n in nodes[:10]]
    query = parse_query("What did Nate and Anna cook?", BASE)
    _, joined = await join_entity_leaves(tree, "u1", query, index, pool, RecallOptions())  # type: ignore[arg-type]
    newest_shared = [f"n{i:04}" for i in range(4_950, 3_999, -50)]
    assert [m.node.id for m in joined[len(pool) :]] == newest_shared
    assert tree.get_many_calls == 1 and tree.read_ids == newest_shared
    assert index.leaves.read <= len(joined)  # type: ignore[attr-defined]


def _nate_or_both(i: int) -> str:
    return "I cooked with Nate and Anna." if i % 50 == 0 else "I saw Nate."
