"""Behaviour every `VectorIndex` backend shows, as a base class of tests.

A backend's test module subclasses `IndexContract` (as `TestSomething`) and implements
`open_index`: build the index on a directory, run `ensure_collection`, and return it with the
coroutine function that closes it. Every test below then runs against that backend.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import pytest

from memstream.adapters.embedding.embedders import HashingEmbedder
from memstream.adapters.qdrant.query import node_from_payload
from memstream.domain.models import IndexedMemory, Level, MemoryNode, ScoredId, SparseVector
from memstream.domain.query import parse_query
from memstream.domain.sparse import document_vector, query_vector

DIM = 32
T0 = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
embedder = HashingEmbedder(DIM)


class Index(Protocol):
    """`VectorIndex` plus the payload reads the recall service uses."""

    async def ensure_collection(self) -> None: ...

    async def upsert(self, memories: Sequence[IndexedMemory]) -> None: ...

    async def search_leaves(
        self,
        user_id: str,
        dense: Sequence[float],
        sparse: SparseVector,
        *,
        limit: int,
        dense_weight: float,
        level: Level = Level.SEGMENT,
    ) -> list[ScoredId]: ...

    async def get(
        self, ids: Sequence[str], *, user_id: str | None = None
    ) -> dict[str, dict[str, Any]]: ...

    async def count(self, user_id: str, level: Level | None = None) -> int: ...

    async def delete_user(self, user_id: str) -> int: ...

    async def delete_points(self, user_id: str, point_ids: Sequence[str]) -> None: ...

    # What a repair reads (`ports.repair.IndexScan`).
    async def total(self) -> int: ...

    async def users_with_points(self, limit: int) -> list[str]: ...

    async def user_nodes(
        self, user_id: str, after: str | None, limit: int
    ) -> tuple[list[MemoryNode], str | None]: ...

    async def versions(self, user_id: str, node_ids: Sequence[str]) -> dict[str, int]: ...


@dataclass
class Opened:
    index: Index
    close: Callable[[], Awaitable[None]]


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


class IndexContract:
    """The shared checks; subclasses say how to open their backend."""

    async def open_index(self, path: Path, dim: int = DIM) -> Opened:
        raise NotImplementedError

    @pytest.fixture
    async def index(self, tmp_path: Path) -> AsyncIterator[Index]:
        opened = await self.open_index(tmp_path / "index")
        yield opened.index
        await opened.close()

    async def test_ensure_collection_is_idempotent_and_checks_size(self, tmp_path: Path) -> None:
        opened = await self.open_index(tmp_path / "i")
        await opened.index.ensure_collection()
        await opened.close()
        again = await self.open_index(tmp_path / "i")
        await again.close()
        with pytest.raises(ValueError, match="dense size"):
            await self.open_index(tmp_path / "i", DIM + 1)

    async def test_upsert_overwrites_by_id(self, index: Index) -> None:
        first = make_node("alice", "Caroline said they adopted a cat named Luna.")
        again = make_node("alice", "Caroline said they adopted a cat named Luna.", version=2)
        await index.upsert([await indexed(first)])
        await index.upsert([await indexed(again)])
        await index.upsert([await indexed(again)])  # a replayed event
        assert await index.count("alice") == 1
        payloads = await index.get([first.id])
        assert node_from_payload(first.id, payloads[first.id]).version == 2
        assert node_from_payload(first.id, payloads[first.id]) == again

    async def test_users_are_isolated(self, index: Index) -> None:
        text = "Melanie said they ran a charity race for mental health."
        alice, bob = make_node("alice", text), make_node("bob", text)
        await index.upsert([await indexed(alice), await indexed(bob)])
        dense = (await embedder.embed(["charity race"]))[0]
        hits = await index.search_leaves(
            "alice", dense, query_vector(parse_query("charity race")), limit=10, dense_weight=0.9
        )
        assert [h.id for h in hits] == [alice.id]
        assert set(await index.get([alice.id, bob.id], user_id="alice")) == {alice.id}
        assert await index.count("bob") == 1 and await index.count("carol") == 0

    async def test_a_user_s_nodes_are_scanned_back_page_by_page_as_they_were_written(
        self, index: Index
    ) -> None:
        assert await index.total() == 0 and await index.users_with_points(10) == []
        mine = [make_node("alice", f"Caroline said fact number {i}.", version=i) for i in (1, 2, 3)]
        mine.append(make_node("alice", "A week of cats.", Level.WEEK))
        other = make_node("bob", "Melanie said she paints.")
        await index.upsert([await indexed(n) for n in (*mine, other)])
        assert await index.total() == 5
        assert await index.users_with_points(10) == ["alice", "bob"]
        assert len(await index.users_with_points(1)) == 1
        scanned: list[MemoryNode] = []
        after: str | None = None
        pages = 0
        while True:
            page, after = await index.user_nodes("alice", after, 3)
            scanned += page
            pages += 1
            if after is None:
                break
        assert pages == 2
        assert sorted(scanned, key=lambda n: n.id) == sorted(mine, key=lambda n: n.id)
        versions = await index.versions(
            "alice", [n.id for n in mine] + [other.id, str(uuid.uuid4())]
        )
        assert versions == {n.id: n.version for n in mine}

    async def test_rare_keyword_breaks_a_dense_tie(self, index: Index) -> None:
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
        query = query_vector(parse_query("Zanzibar trip"))
        hits = await index.search_leaves("alice", same, query, limit=3, dense_weight=0.9)
        # Dense scores tie at 1.0: the rare term lifts more than the common one (IDF).
        assert [h.id for h in hits] == [keyword.id, common.id, close.id]
        assert 0.9 < hits[1].score < hits[0].score < 1.0  # saturated: never a full 0.1
        assert math.isclose(hits[2].score, 0.9, rel_tol=1e-5)  # no query term: dense only
        dense_only = await index.search_leaves("alice", same, query, limit=3, dense_weight=1.0)
        assert [round(h.score, 5) for h in dense_only] == [1.0, 1.0, 1.0]

    async def test_query_without_content_words_uses_dense_only(self, index: Index) -> None:
        # Four words the hashing embedder puts in four dimensions: a vector the float16 shard
        # stores exactly, so the dense score is exactly 1.
        node = make_node("alice", "Melanie said they adopted a cat.")
        await index.upsert([await indexed(node)])
        dense = (await embedder.embed([node.text]))[0]
        hits = await index.search_leaves(
            "alice", dense, SparseVector((), ()), limit=5, dense_weight=0.9
        )
        assert [h.id for h in hits] == [node.id]
        assert math.isclose(hits[0].score, 0.9, rel_tol=1e-5)

    async def test_levels_are_filtered_and_counted(self, index: Index) -> None:
        leaf = make_node("alice", "Caroline said they painted a sunrise.")
        session = make_node("alice", "Session on 8 May 2023: painting.", level=Level.SESSION)
        await index.upsert([await indexed(leaf), await indexed(session)])
        dense = (await embedder.embed(["painting sunrise"]))[0]
        sparse = query_vector(parse_query("painting sunrise"))
        leaves = await index.search_leaves("alice", dense, sparse, limit=5, dense_weight=0.9)
        assert [h.id for h in leaves] == [leaf.id]
        sessions = await index.search_leaves(
            "alice", dense, sparse, limit=5, dense_weight=0.9, level=Level.SESSION
        )
        assert [h.id for h in sessions] == [session.id]
        assert await index.count("alice", Level.SESSION) == 1
        assert await index.count("alice") == 2

    async def test_delete_user_removes_only_that_user(self, index: Index) -> None:
        alice = [make_node("alice", f"Caroline said fact number {i}.") for i in range(3)]
        bob = make_node("bob", "Melanie said a fact.")
        await index.upsert([await indexed(n) for n in [*alice, bob]])
        assert await index.delete_user("alice") == 3
        assert await index.count("alice") == 0
        assert await index.count("bob") == 1
        assert await index.delete_user("alice") == 0

    async def test_delete_points_removes_exactly_those_points(self, index: Index) -> None:
        nodes = [make_node("alice", f"Caroline said fact number {i}.") for i in range(3)]
        await index.upsert([await indexed(n) for n in nodes])
        await index.delete_points("alice", [nodes[0].id, nodes[2].id])
        await index.delete_points("alice", [])
        assert list(await index.get([n.id for n in nodes], user_id="alice")) == [nodes[1].id]

    async def test_points_survive_reopen(self, tmp_path: Path) -> None:
        nodes = [make_node("alice", f"Caroline said she kept diary page {i}.") for i in range(20)]
        axes = [[float(i == j) for j in range(DIM)] for i in range(len(nodes))]
        opened = await self.open_index(tmp_path / "i")
        await opened.index.upsert([await indexed(n, a) for n, a in zip(nodes, axes, strict=True)])
        await opened.close()
        reopened = await self.open_index(tmp_path / "i")
        try:
            assert await reopened.index.count("alice") == len(nodes)
            stored = await reopened.index.get([n.id for n in nodes], user_id="alice")
            assert [node_from_payload(n.id, stored[n.id]) for n in nodes] == nodes
            hits = await reopened.index.search_leaves(
                "alice", axes[7], query_vector(parse_query("diary page")), limit=1, dense_weight=0.9
            )
            assert [h.id for h in hits] == [nodes[7].id]
        finally:
            await reopened.close()
