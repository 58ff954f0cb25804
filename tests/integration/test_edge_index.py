"""EdgeIndex (qdrant-edge shard on disk) against the index contract, and against QdrantIndex."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from qdrant_client import AsyncQdrantClient
from qdrant_edge import (
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeSparseVectorParams,
    EdgeVectorParams,
    Modifier,
)

from memstream.adapters.qdrant.edge import EdgeIndex
from memstream.adapters.qdrant.server import QdrantIndex
from memstream.domain.models import IndexedMemory, Level, SparseVector
from memstream.domain.query import parse_query
from memstream.domain.sparse import document_vector, query_vector

from .index_contract import DIM, IndexContract, Opened, make_node

pytestmark = pytest.mark.integration


async def open_edge(path: Path, dim: int = DIM) -> EdgeIndex:
    index = EdgeIndex.open(path, dim)
    await index.ensure_collection()
    return index


async def open_local(path: Path, dim: int = DIM) -> tuple[QdrantIndex, AsyncQdrantClient]:
    client = AsyncQdrantClient(path=str(path))
    index = QdrantIndex(client, "memories", dim)
    try:
        await index.ensure_collection()
    except BaseException:
        await client.close()
        raise
    return index, client


class TestEdgeIndex(IndexContract):
    async def open_index(self, path: Path, dim: int = DIM) -> Opened:
        index = await open_edge(path, dim)
        return Opened(index, index.close)


class TestLocalQdrantIndex(IndexContract):
    """The reference: the same contract on qdrant-client's local mode."""

    async def open_index(self, path: Path, dim: int = DIM) -> Opened:
        index, client = await open_local(path, dim)
        return Opened(index, client.close)


async def test_one_open_shard_per_directory(tmp_path: Path) -> None:
    index = await open_edge(tmp_path / "shard")
    assert await index.ping()
    with pytest.raises(Exception, match="WAL"):
        EdgeIndex.open(tmp_path / "shard", DIM)
    await index.close()
    with pytest.raises(Exception, match="not initialized"):
        await index.ping()  # a closed shard is not ready
    await (await open_edge(tmp_path / "shard")).close()


WORDS = (
    "cat",
    "dog",
    "painting",
    "sunrise",
    "charity",
    "race",
    "camping",
    "lake",
    "guitar",
    "concert",
    "museum",
    "pottery",
    "adoption",
    "school",
    "hiking",
    "beach",
    "festival",
    "library",
    "recipe",
    "garden",
    "violin",
    "marathon",
)


def corpus(rng: random.Random) -> list[IndexedMemory]:
    memories = []
    for user in ("alice", "bob", "carol"):
        for i in range(40):
            words = " ".join(rng.choices(WORDS, k=rng.randint(3, 9)))
            level = Level.SESSION if i % 5 == 0 else Level.SEGMENT
            node = make_node(user, f"Caroline said {words} ({i}).", level=level)
            dense = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
            memories.append(
                IndexedMemory(node=node, dense=dense, sparse=document_vector(node.text))
            )
    return memories


async def test_same_ranking_as_qdrant_local_mode(tmp_path: Path) -> None:
    rng = random.Random(20230508)
    memories = corpus(rng)
    edge = await open_edge(tmp_path / "edge")
    local, client = await open_local(tmp_path / "local")
    try:
        for target in (edge, local):
            await target.upsert(memories[:70])
            await target.upsert(memories[70:])
            await target.upsert(memories[:10])  # replays must not skew the IDF statistics
        for q in range(24):
            user = ("alice", "bob", "carol")[q % 3]
            dense = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
            words = " ".join(rng.sample(WORDS, k=rng.randint(0, 3)))
            sparse = query_vector(parse_query(words)) if words else SparseVector((), ())
            weight = (0.5, 0.8, 1.0)[q % 3]
            level = Level.SESSION if q % 4 == 0 else Level.SEGMENT
            got, want = [
                await index.search_leaves(
                    user, dense, sparse, limit=5, dense_weight=weight, level=level
                )
                for index in (edge, local)
            ]
            assert [h.id for h in got] == [h.id for h in want], (q, words)
            # The edge shard stores float16 vectors, the reference float32: a cosine of unit
            # vectors moves by well under 1e-3, far less than the gaps the ranking shows.
            for g, w in zip(got, want, strict=True):
                assert math.isclose(g.score, w.score, abs_tol=1e-3), (q, words)
    finally:
        await edge.close()
        await client.close()


async def test_new_shards_store_float16_and_older_float32_shards_still_open(
    tmp_path: Path,
) -> None:
    new = await open_edge(tmp_path / "new")
    await new.close()
    stored = json.loads((tmp_path / "new" / "edge_config.json").read_text())
    assert stored["vectors"]["dense"]["datatype"] == "float16"

    # A shard as earlier versions created it: no datatype named, float32 vectors.
    EdgeShard.create(
        str(tmp_path / "old"),
        EdgeConfig(
            vectors={"dense": EdgeVectorParams(size=DIM, distance=Distance.Cosine)},
            sparse_vectors={"lexical": EdgeSparseVectorParams(modifier=Modifier.Idf)},
        ),
    ).close()
    memory = corpus(random.Random(7))[0]
    old = await open_edge(tmp_path / "old")
    await old.upsert([memory])
    await old.close()
    reopened = await open_edge(tmp_path / "old")
    try:
        hits = await reopened.search_leaves(
            memory.node.user_id,
            memory.dense,
            memory.sparse,
            limit=1,
            dense_weight=1.0,
            level=memory.node.level,
        )
        assert [h.id for h in hits] == [memory.node.id]
        assert math.isclose(hits[0].score, 1.0, rel_tol=1e-6)  # float32: exact
    finally:
        await reopened.close()


async def test_a_search_pool_of_one_thread_answers_alike(tmp_path: Path) -> None:
    rng = random.Random(34)
    memories = corpus(rng)
    index = await open_edge(tmp_path / "shard")
    for start in range(0, len(memories), 7):  # a segment or more per few points
        await index.upsert(memories[start : start + 7])
    queries = []
    for q in range(9):
        dense = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
        sparse = query_vector(parse_query(" ".join(rng.sample(WORDS, k=2))))
        queries.append((("alice", "bob", "carol")[q % 3], dense, sparse))
    answers = []
    for threads in (None, 1):
        if threads is not None:
            await index.close()
            index = EdgeIndex.open(tmp_path / "shard", DIM, search_threads=threads)
        answers.append(
            [
                await index.search_leaves(user, dense, sparse, limit=5, dense_weight=0.5)
                for user, dense, sparse in queries
            ]
        )
    await index.close()
    assert answers[0] == answers[1]
    assert all(answers[0])
