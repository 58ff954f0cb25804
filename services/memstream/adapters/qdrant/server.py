"""The vector index on a Qdrant server (or qdrant-client's local mode): one collection for
every user and level, tenant-filtered.

The layout, the points and the fused leaf query are built in `query.py` (its docstring explains
the formula); this module sends them with `AsyncQdrantClient`. qdrant-client 1.20's local mode
evaluates `FormulaQuery` with `$score[i]` as a server does, so tests can use it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from qdrant_client import AsyncQdrantClient, models

from memstream.adapters.qdrant.query import (
    DENSE,
    LEXICAL,
    LEXICAL_HALF_SCORE,
    PAYLOAD_INDEXES,
    leaf_query,
    memory_point,
    payloads_by_id,
    user_filter,
)
from memstream.adapters.qdrant.sealing import (
    PayloadKeys,
    opened_node,
    payload_version,
    sealed_payload,
)
from memstream.domain.models import IndexedMemory, Level, MemoryNode, ScoredId, SparseVector
from memstream.ports import DataKeys

_LOCAL_INDEX_WARNING = "Payload indexes have no effect in the local Qdrant"


class QdrantIndex:
    """`VectorIndex` over one Qdrant collection shared by all users and levels."""

    def __init__(
        self,
        client: AsyncQdrantClient,
        collection: str,
        dim: int,
        *,
        lexical_half_score: float = LEXICAL_HALF_SCORE,
        keys: DataKeys | None = None,
    ) -> None:
        """`keys`: the users' data keys, to seal the words of the payloads (`sealing.py`)."""
        if lexical_half_score <= 0:
            raise ValueError("lexical_half_score must be positive")
        self._client = client
        self._collection = collection
        self._dim = dim
        self._half = lexical_half_score
        self._keys = PayloadKeys(keys)

    async def ping(self) -> bool:
        """Readiness: the server answers and the collection exists."""
        return bool(await self._client.collection_exists(self._collection))

    async def ensure_collection(self) -> None:
        """Create the collection and its payload indexes if missing; check the vector size."""
        if not await self._client.collection_exists(self._collection):
            try:
                await self._client.create_collection(
                    self._collection,
                    vectors_config={
                        DENSE: models.VectorParams(size=self._dim, distance=models.Distance.COSINE)
                    },
                    sparse_vectors_config={
                        LEXICAL: models.SparseVectorParams(modifier=models.Modifier.IDF)
                    },
                    # Every query filters on one user: Qdrant's multitenancy layout builds
                    # per-tenant HNSW links (payload_m) instead of one global graph (m=0).
                    hnsw_config=models.HnswConfigDiff(payload_m=16, m=0),
                )
            except Exception:
                # Another worker may have created it between our check and our create.
                if not await self._client.collection_exists(self._collection):
                    raise
        await self._check_dim()
        await self._ensure_payload_indexes()

    async def _check_dim(self) -> None:
        info = await self._client.get_collection(self._collection)
        vectors = info.config.params.vectors
        params = vectors.get(DENSE) if isinstance(vectors, dict) else None
        if params is None or params.size != self._dim:
            size = None if params is None else params.size
            raise ValueError(
                f"collection {self._collection!r} has dense size {size}, embedder has {self._dim}"
            )

    async def _ensure_payload_indexes(self) -> None:
        # Local mode ignores payload indexes and warns once; the indexes matter on a server,
        # so create them anyway and silence only that one message. Idempotent on a server.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_LOCAL_INDEX_WARNING, category=UserWarning)
            for field, schema in PAYLOAD_INDEXES.items():
                await self._client.create_payload_index(
                    self._collection, field_name=field, field_schema=schema, wait=True
                )

    async def upsert(self, memories: Sequence[IndexedMemory]) -> None:
        """Write or overwrite nodes by id (same id -> same point, so replays never duplicate)."""
        if not memories:
            return
        memories, found = await self._keys.for_writing(memories)
        if not memories:
            return
        points = [
            memory_point(m, sealed_payload(m.node, found.get(m.node.user_id))) for m in memories
        ]
        await self._client.upsert(self._collection, points=points, wait=True)

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
        """Top `limit` nodes of one user and level by fused dense + saturated lexical score."""
        request = leaf_query(
            user_id,
            dense,
            sparse,
            limit=limit,
            dense_weight=dense_weight,
            level=level,
            lexical_half_score=self._half,
        )
        (response,) = await self._client.query_batch_points(self._collection, [request])
        return [ScoredId(id=str(p.id), score=float(p.score)) for p in response.points]

    async def get(
        self, ids: Sequence[str], *, user_id: str | None = None
    ) -> dict[str, dict[str, Any]]:
        """Payloads of the given ids that exist; with `user_id`, other users' points are dropped."""
        if not ids:
            return {}
        records = await self._client.retrieve(
            self._collection, ids=list(ids), with_payload=True, with_vectors=False
        )
        return payloads_by_id(records, user_id)

    async def count(self, user_id: str, level: Level | None = None) -> int:
        result = await self._client.count(
            self._collection, count_filter=user_filter(user_id, level), exact=True
        )
        return result.count

    async def delete_user(self, user_id: str) -> int:
        """Remove every point of a user; returns how many there were just before the delete.

        The count and the delete are two calls: a point written in between is deleted but not
        counted. Forget requests are rare and the delete itself is complete, so that is fine.
        """
        removed = await self.count(user_id)
        await self._client.delete(
            self._collection,
            points_selector=models.FilterSelector(filter=user_filter(user_id)),
            wait=True,
        )
        return removed

    async def vacuum(self) -> None:
        """Nothing: a Qdrant server's storage is its operator's, and its optimizers vacuum
        deleted points by the collection's thresholds (docs/forget-everywhere.md)."""

    async def delete_points(self, user_id: str, point_ids: Sequence[str]) -> None:
        """Remove these points (node ids are uuid5 of the user and more: one user's each)."""
        if point_ids:
            selector = models.PointIdsList(points=list(point_ids))
            await self._client.delete(self._collection, points_selector=selector, wait=True)

    # What noticing and repairing a lost store reads (`ports.repair.IndexScan`).

    async def total(self) -> int:
        """Points in the collection (approximate on a server: enough to tell empty from not)."""
        return (await self._client.count(self._collection, exact=False)).count

    async def users_with_points(self, limit: int) -> list[str]:
        """Users holding points, through the tenant index's facet."""
        reply = await self._client.facet(self._collection, key="user_id", limit=limit, exact=True)
        return [str(hit.value) for hit in reply.hits]

    async def user_nodes(
        self, user_id: str, after: str | None, limit: int
    ) -> tuple[list[MemoryNode], str | None]:
        records, following = await self._client.scroll(
            self._collection,
            scroll_filter=user_filter(user_id),
            limit=limit,
            offset=after,
            with_payload=True,
            with_vectors=False,
        )
        key = (await self._keys.for_reading([user_id])).get(user_id)
        nodes = [opened_node(str(r.id), dict(r.payload or {}), key) for r in records]
        return nodes, None if following is None else str(following)

    async def versions(self, user_id: str, node_ids: Sequence[str]) -> dict[str, int]:
        payloads = await self.get(node_ids, user_id=user_id)
        return {i: payload_version(i, p) for i, p in payloads.items()}
