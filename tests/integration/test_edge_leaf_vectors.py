"""The leaf search with users' vectors held in process (`leaf_vectors.py`): the exact search's
answer, and engine work that does not grow with the user's history."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from qdrant_client import models

from memstream.adapters.qdrant import edge
from memstream.adapters.qdrant.coarse_cells import SPLIT_ROWS
from memstream.adapters.qdrant.edge import EdgeIndex
from memstream.adapters.qdrant.leaf_vectors import LeafVectors
from memstream.adapters.qdrant.query import prefetch_depth
from memstream.domain.models import IndexedMemory, Level, ScoredId
from memstream.domain.query import parse_query
from memstream.domain.sparse import document_vector, query_vector

from .index_contract import DIM, IndexContract, Opened, make_node
from .test_edge_index import WORDS

pytestmark = pytest.mark.integration

LIMIT = 20
HEAVY, LIGHT = 3_000, 80


class TestEdgeIndexHoldingVectors(IndexContract):
    """The index contract with every user's vectors held."""

    async def open_index(self, path: Path, dim: int = DIM) -> Opened:
        shard = EdgeIndex.open(path, dim)._shard
        index = EdgeIndex(shard, leaf_vectors=LeafVectors(2**20, from_points=0))
        await index.ensure_collection()
        return Opened(index, index.close)


def leaves(user: str, count: int, rng: random.Random) -> list[IndexedMemory]:
    """Vectors crowded into a cone as a sentence model's are: many near-ties to rank."""
    axis = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
    memories = []
    for i in range(count):
        words = " ".join(rng.choices(WORDS, k=rng.randint(3, 9)))
        node = make_node(user, f"{words} ({i}).")
        dense = [a + rng.gauss(0.0, 0.6) for a in axis]
        memories.append(IndexedMemory(node=node, dense=dense, sparse=document_vector(node.text)))
    return memories


@pytest.fixture
async def shard(tmp_path: Path) -> AsyncIterator[tuple[EdgeIndex, EdgeIndex, LeafVectors]]:
    """One shard, searched through held vectors and by the engine's scan alone."""
    scanning = EdgeIndex.open(tmp_path / "shard", DIM)
    await scanning.ensure_collection()
    held = LeafVectors(64 * 2**20, from_points=0)
    holding = EdgeIndex(scanning._shard, leaf_vectors=held)
    try:
        yield holding, scanning, held
    finally:
        await holding.close()  # after the reads it started


async def held_once_searched(index: EdgeIndex, held: LeafVectors, user: str) -> None:
    """Search once, which starts reading the user's vectors, and wait until they are held."""
    await searched(index, user, random.Random(0))
    deadline = time.monotonic() + 10
    while not held.holds((user, int(Level.SEGMENT))):
        assert time.monotonic() < deadline, f"{user}'s vectors never held"
        await asyncio.sleep(0.01)
    held.scored = 0


async def searched(
    index: EdgeIndex, user: str, rng: random.Random
) -> tuple[list[float], set[ScoredId]]:
    """A random question's scores, and its hits above the last score. The engine orders and
    cuts a tie as it comes (the same search twice may not), and many points here score on
    one word alone: equal scores are the rule among them."""
    dense = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
    sparse = query_vector(parse_query(" ".join(rng.sample(WORDS, k=2))))
    hits = await index.search_leaves(user, dense, sparse, limit=LIMIT, dense_weight=0.5)
    return [h.score for h in hits], {h for h in hits if h.score > hits[-1].score}


async def test_the_answer_is_the_scan_s_and_the_engine_scores_a_bounded_set(
    shard: tuple[EdgeIndex, EdgeIndex, LeafVectors], monkeypatch: pytest.MonkeyPatch
) -> None:
    holding, scanning, held = shard
    rng = random.Random(37)
    for user, count in (("heavy", HEAVY), ("light", LIGHT)):
        memories = leaves(user, count, rng)
        for start in range(0, count, 500):
            await holding.upsert(memories[start : start + 500])
        await held_once_searched(holding, held, user)
    scored: list[int] = []
    translate = edge.edge_request

    def counting(request: models.QueryRequest) -> object:
        # The ids the engine's dense prefetch may score; the whole user without a list.
        flt = request.prefetch[0].filter  # type: ignore[index, union-attr]
        among = [c for c in flt.must if isinstance(c, models.HasIdCondition)]
        scored.append(len(among[0].has_id) if among else -1)
        return translate(request)

    monkeypatch.setattr(edge, "edge_request", counting)
    for q in range(12):
        user = ("heavy", "light")[q % 2]
        seed = rng.random()
        got = await searched(holding, user, random.Random(seed))
        want = await searched(scanning, user, random.Random(seed))
        assert got == want  # the engine scored both: the same scores, to the last bit
    depth = prefetch_depth(LIMIT)
    heavy_lists = scored[0::4]  # each pair of searches: holding then scanning
    # The best `depth` and the few within the margin of the last: not the user's 3,000.
    assert all(depth <= n <= depth + depth // 4 for n in heavy_lists), heavy_lists
    assert held.scored == 6 * HEAVY + 6 * LIGHT  # the product's rows: each user's once a search


async def test_writes_after_the_first_search_reach_the_held_vectors(
    shard: tuple[EdgeIndex, EdgeIndex, LeafVectors],
) -> None:
    holding, scanning, held = shard
    rng = random.Random(5)
    memories = leaves("heavy", 600, rng)
    await holding.upsert(memories[:500])
    await held_once_searched(holding, held, "heavy")
    await holding.upsert(memories[500:])
    rewritten = IndexedMemory(memories[3].node, memories[599].dense, memories[3].sparse)
    await holding.upsert([rewritten])
    await holding.delete_points("heavy", [memories[599].node.id])
    for _ in range(6):
        seed = rng.random()
        got = await searched(holding, "heavy", random.Random(seed))
        assert got == await searched(scanning, "heavy", random.Random(seed))
    # The rewritten point is found by its new vector, the deleted one not at all.
    hits = await holding.search_leaves(
        "heavy", memories[599].dense, rewritten.sparse, limit=3, dense_weight=1.0
    )
    assert hits[0].id == memories[3].node.id
    assert memories[599].node.id not in {h.id for h in hits}


async def test_a_user_larger_than_the_budget_is_scanned(tmp_path: Path) -> None:
    index = EdgeIndex.open(tmp_path / "shard", DIM)
    await index.ensure_collection()
    small = LeafVectors(LIGHT * DIM * 4, from_points=0)
    limited = EdgeIndex(index._shard, leaf_vectors=small)
    try:
        rng = random.Random(11)
        await limited.upsert(leaves("heavy", 600, rng))
        await limited.upsert([m for m in leaves("light", 40, rng) if m.node.level == Level.SEGMENT])
        heavy = await searched(limited, "heavy", random.Random(1))
        assert heavy == await searched(index, "heavy", random.Random(1))
        await held_once_searched(limited, small, "light")
        await searched(limited, "light", random.Random(2))
        await searched(limited, "heavy", random.Random(2))
        assert small.scored == 40  # the light user held, the heavy one scanned by the engine
        assert not small.holds(("heavy", int(Level.SEGMENT)))
    finally:
        await limited.close()


async def test_a_user_of_few_points_is_left_to_the_engine_until_it_has_more(
    tmp_path: Path,
) -> None:
    index = EdgeIndex.open(tmp_path / "shard", DIM)
    await index.ensure_collection()
    held = LeafVectors(2**20, from_points=100)
    holding = EdgeIndex(index._shard, leaf_vectors=held)
    try:
        memories = leaves("light", 160, random.Random(3))
        await holding.upsert(memories[:90])
        await searched(holding, "light", random.Random(4))
        assert held.scored == 0
        await holding.upsert(memories[90:])  # past the bound: counted again, then held
        await held_once_searched(holding, held, "light")
        got = await searched(holding, "light", random.Random(4))
        assert held.scored == 160
        assert got == await searched(index, "light", random.Random(4))
    finally:
        await holding.close()


async def test_a_user_counted_small_is_searched_in_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = EdgeIndex.open(tmp_path / "shard", DIM)
    await index.ensure_collection()
    holding = EdgeIndex(index._shard, leaf_vectors=LeafVectors(2**20, from_points=1_000))
    monkeypatch.setattr(edge, "_INLINE_SEARCH_POINTS", 50)
    threads: list[int] = []
    search = holding._search

    def recording(*arguments: object) -> list[object]:
        threads.append(threading.get_ident())
        return search(*arguments)  # type: ignore[arg-type]

    monkeypatch.setattr(holding, "_search", recording)
    try:
        memories = leaves("light", 60, random.Random(8))
        await holding.upsert(memories[:40])
        first = await searched(holding, "light", random.Random(9))  # counts the user
        again = await searched(holding, "light", random.Random(9))
        await holding.upsert(memories[40:])  # past the bound
        grown = await searched(holding, "light", random.Random(9))
        loop = threading.get_ident()
        assert [t == loop for t in threads] == [False, True, False]
        assert again == first
        assert grown == await searched(index, "light", random.Random(9))
    finally:
        await holding.close()


async def test_a_probed_search_scores_rows_that_do_not_grow_with_the_history(
    tmp_path: Path,
) -> None:
    """With a probe, the rows a search scores (`LeafVectors.scored`) are the probe's and at
    most one cell past it, for a user of 1,500 points and one of four times as many; every
    score the search returns is the engine's exact one. Scoring every row (the code before
    the cells) scores 6,000 rows a search of the larger user."""
    index = EdgeIndex.open(tmp_path / "shard", DIM)
    await index.ensure_collection()
    probe = 300
    held = LeafVectors(64 * 2**20, from_points=0, probe=probe)
    probing = EdgeIndex(index._shard, leaf_vectors=held)
    try:
        rng = random.Random(23)
        for user, count in (("short", 1_500), ("long", 6_000)):
            memories = leaves(user, count, rng)
            for start in range(0, count, 1_000):
                await probing.upsert(memories[start : start + 1_000])
            await held_once_searched(probing, held, user)
        scored: dict[str, int] = {}
        for user in ("short", "long"):
            held.scored = 0
            for _ in range(5):
                dense, sparse = (
                    [rng.gauss(0.0, 1.0) for _ in range(DIM)],
                    query_vector(parse_query(" ".join(rng.sample(WORDS, k=2)))),
                )
                hits = await probing.search_leaves(
                    user, dense, sparse, limit=LIMIT, dense_weight=1.0
                )
                exact = await index.search_leaves(
                    user, dense, sparse, limit=20 * LIMIT, dense_weight=1.0
                )
                scores = {h.id: h.score for h in exact}
                assert len(hits) == LIMIT
                assert all(scores.get(h.id) == h.score for h in hits if h.id in scores)
            scored[user] = held.scored // 5
        assert all(probe <= n <= probe + SPLIT_ROWS for n in scored.values()), scored
    finally:
        await probing.close()
