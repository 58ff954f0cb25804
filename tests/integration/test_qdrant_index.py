"""QdrantIndex against a real qdrant-client local-mode instance."""

import math
import uuid
import warnings
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from qdrant_client import AsyncQdrantClient
from qdrant_client.common import client_warnings

from memstream.adapters.embedders import HashingEmbedder
from memstream.adapters.ports import IndexedMemory, SparseVector
from memstream.adapters.qdrant_index import QdrantIndex, node_from_payload
from memstream.adapters.sparse import document_vector, query_vector
from memstream.domain.models import Level, MemoryNode

pytestmark = pytest.mark.integration

DIM = 32
T0 = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
embedder = HashingEmbedder(DIM)


@pytest.fixture
async def index(tmp_path: Path) -> AsyncIterator[QdrantIndex]:
    client = AsyncQdrantClient(path=str(tmp_path / "qdrant"))
    idx = QdrantIndex(client, "memories", DIM)
    await idx.ensure_collection()
    yield idx
    await client.close()


def make_node(user: str, text: str, level: Level = Level.SEGMENT, version: int = 1) -> MemoryNode:
    return MemoryNode(
        id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{user}/{level}/{text}")),
        user_id=user,
        level=level,
        t_start=T0,
        t_end=T0 + timedelta(minutes=5),
        text=text,
        source_ids=(f"{user}:e1", f"{user}:e2"),
        speakers=("Caroline", "Melanie"),
        version=version,
        session_id="s1",
    )


async def indexed(node: MemoryNode, dense: list[float] | None = None) -> IndexedMemory:
    vector = dense if dense is not None else (await embedder.embed([node.text]))[0]
    return IndexedMemory(node=node, dense=vector, sparse=document_vector(node.text))


async def test_ensure_collection_is_idempotent_and_quiet(tmp_path: Path) -> None:
    client = AsyncQdrantClient(path=str(tmp_path / "q"))
    # The local-mode warning is shown once per process; forget that it was shown.
    client_warnings.SEEN_MESSAGES.discard("create-local-payload-indexes")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await QdrantIndex(client, "m", DIM).ensure_collection()
        await QdrantIndex(client, "m", DIM).ensure_collection()
    assert not [w for w in caught if "Payload indexes" in str(w.message)]
    with pytest.raises(ValueError, match="dense size 32"):
        await QdrantIndex(client, "m", DIM + 1).ensure_collection()
    await client.close()


async def test_upsert_overwrites_by_id(index: QdrantIndex) -> None:
    first = make_node("alice", "Caroline said they adopted a cat named Luna.")
    again = make_node("alice", "Caroline said they adopted a cat named Luna.", version=2)
    await index.upsert([await indexed(first)])
    await index.upsert([await indexed(again)])
    await index.upsert([await indexed(again)])  # a replayed event
    assert await index.count("alice") == 1
    payloads = await index.get([first.id])
    assert payloads[first.id]["version"] == 2
    restored = node_from_payload(first.id, payloads[first.id])
    assert restored == again


async def test_users_are_isolated(index: QdrantIndex) -> None:
    text = "Melanie said they ran a charity race for mental health."
    alice, bob = make_node("alice", text), make_node("bob", text)
    await index.upsert([await indexed(alice), await indexed(bob)])
    dense = (await embedder.embed(["charity race"]))[0]
    hits = await index.search_leaves(
        "alice", dense, query_vector("charity race"), limit=10, dense_weight=0.9
    )
    assert [h.id for h in hits] == [alice.id]
    assert set(await index.get([alice.id, bob.id], user_id="alice")) == {alice.id}
    assert await index.count("bob") == 1 and await index.count("carol") == 0


async def test_rare_keyword_breaks_a_dense_tie(index: QdrantIndex) -> None:
    same = [1.0] + [0.0] * (DIM - 1)
    keyword = make_node("alice", "Caroline said the Zanzibar trip was wonderful.")
    common = make_node("alice", "Caroline said the long trip was wonderful.")
    close = make_node("alice", "Caroline said the island holiday was wonderful.")
    filler = [
        make_node("alice", f"Melanie said the trip number {i} was wonderful.") for i in range(8)
    ]
    orthogonal = [0.0, 1.0] + [0.0] * (DIM - 2)
    await index.upsert(
        [await indexed(n, same) for n in (close, common, keyword)]
        + [await indexed(n, orthogonal) for n in filler]
    )
    query = query_vector("Zanzibar trip")
    hits = await index.search_leaves("alice", same, query, limit=3, dense_weight=0.9)
    # Dense scores tie at 1.0: the rare term lifts more than the common one (IDF).
    assert [h.id for h in hits] == [keyword.id, common.id, close.id]
    assert 0.9 < hits[1].score < hits[0].score < 1.0  # saturated: never a full 0.1
    assert math.isclose(hits[2].score, 0.9, rel_tol=1e-5)  # no query term: dense only
    dense_only = await index.search_leaves("alice", same, query, limit=3, dense_weight=1.0)
    assert [round(h.score, 5) for h in dense_only] == [1.0, 1.0, 1.0]


async def test_query_without_content_words_uses_dense_only(index: QdrantIndex) -> None:
    node = make_node("alice", "Caroline said they adopted a cat.")
    await index.upsert([await indexed(node)])
    dense = (await embedder.embed([node.text]))[0]
    hits = await index.search_leaves(
        "alice", dense, SparseVector((), ()), limit=5, dense_weight=0.9
    )
    assert [h.id for h in hits] == [node.id]
    assert math.isclose(hits[0].score, 0.9, rel_tol=1e-5)


async def test_levels_are_filtered_and_counted(index: QdrantIndex) -> None:
    leaf = make_node("alice", "Caroline said they painted a sunrise.")
    session = make_node("alice", "Session on 8 May 2023: painting.", level=Level.SESSION)
    await index.upsert([await indexed(leaf), await indexed(session)])
    dense = (await embedder.embed(["painting sunrise"]))[0]
    sparse = query_vector("painting sunrise")
    leaves = await index.search_leaves("alice", dense, sparse, limit=5, dense_weight=0.9)
    assert [h.id for h in leaves] == [leaf.id]
    sessions = await index.search_leaves(
        "alice", dense, sparse, limit=5, dense_weight=0.9, level=Level.SESSION
    )
    assert [h.id for h in sessions] == [session.id]
    assert await index.count("alice", Level.SESSION) == 1
    assert await index.count("alice") == 2


async def test_delete_user_removes_only_that_user(index: QdrantIndex) -> None:
    alice = [make_node("alice", f"Caroline said fact number {i}.") for i in range(3)]
    bob = make_node("bob", "Melanie said a fact.")
    await index.upsert([await indexed(n) for n in [*alice, bob]])
    assert await index.delete_user("alice") == 3
    assert await index.count("alice") == 0
    assert await index.count("bob") == 1
    assert await index.delete_user("alice") == 0
