"""The vector index on Qdrant: one collection for every user and level, tenant-filtered.

Each point is one memory node (point id = node id), with a named dense vector ("dense",
cosine) and a named sparse vector ("lexical", BM25 term-frequency weights; Qdrant applies
IDF through `Modifier.IDF`, over the whole collection).

Leaf search fuses both channels inside Qdrant in one `query_points` call: a dense and a
lexical prefetch, each filtered on the user, rescored by a formula

    fused = w * dense + (1 - w) * lexical / (lexical + LEXICAL_HALF_SCORE)

Raw BM25 scores are unbounded, so they are squashed into [0, 1) by saturation rather than
by max-normalisation over the candidate set, for three reasons: it is a per-point
expression, so the server evaluates it (no second round trip, no client-side fusion); it is
absolute, so a candidate set whose best match is one common word does not get a full 1.0
lexical score; and a score means the same thing from one query to the next. A point found
by only one prefetch scores 0 in the other channel. This was checked against qdrant-client
1.20's local mode, which evaluates `FormulaQuery` with `$score[i]` the same way.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from qdrant_client import AsyncQdrantClient, models

from memstream.domain.models import IndexedMemory, Level, MemoryNode, ScoredId, SparseVector

DENSE = "dense"
LEXICAL = "lexical"
# The IDF-weighted BM25 score of about one match on a moderately rare term (IDF ~5 once a
# collection holds thousands of memories): one such match gives a lexical score near 0.5,
# several matches approach 1.
LEXICAL_HALF_SCORE = 5.0
# Each channel brings this many candidates per requested result (at least MIN_PREFETCH),
# so a point ranked low by one channel can still be lifted by the other.
PREFETCH_FACTOR = 3
MIN_PREFETCH = 50
_LOCAL_INDEX_WARNING = "Payload indexes have no effect in the local Qdrant"


def _user_filter(user_id: str, level: Level | None = None) -> models.Filter:
    must: list[models.Condition] = [
        models.FieldCondition(key="user_id", match=models.MatchValue(value=user_id))
    ]
    if level is not None:
        must.append(models.FieldCondition(key="level", match=models.MatchValue(value=int(level))))
    return models.Filter(must=must)


def _epoch(instant: datetime) -> float:
    return instant.timestamp()


def node_payload(node: MemoryNode) -> dict[str, Any]:
    """The payload stored with a node: epoch seconds for range filters, ISO for people."""
    return {
        "user_id": node.user_id,
        "level": int(node.level),
        "t_start": _epoch(node.t_start),
        "t_end": _epoch(node.t_end),
        "t_start_iso": node.t_start.isoformat(),
        "t_end_iso": node.t_end.isoformat(),
        "text": node.text,
        "parent_id": node.parent_id,
        "source_ids": list(node.source_ids),
        "session_id": node.session_id,
        "speakers": list(node.speakers),
        "version": node.version,
        "degraded": node.degraded,
    }


def node_from_payload(node_id: str, payload: dict[str, Any]) -> MemoryNode:
    """Rebuild a node from its payload; children live in Redis, so they come back empty."""
    return MemoryNode(
        id=node_id,
        user_id=payload["user_id"],
        level=Level(payload["level"]),
        t_start=_from_payload_time(payload, "t_start"),
        t_end=_from_payload_time(payload, "t_end"),
        text=payload["text"],
        parent_id=payload.get("parent_id"),
        source_ids=tuple(payload.get("source_ids") or ()),
        version=int(payload.get("version", 1)),
        degraded=bool(payload.get("degraded", False)),
        session_id=payload.get("session_id"),
        speakers=tuple(payload.get("speakers") or ()),
    )


def _from_payload_time(payload: dict[str, Any], key: str) -> datetime:
    # The ISO string keeps the original offset (the user's zone); epoch seconds are the backup.
    iso = payload.get(f"{key}_iso")
    if iso:
        return datetime.fromisoformat(iso)
    return datetime.fromtimestamp(float(payload[key]), tz=UTC)


def _to_qdrant_sparse(vector: SparseVector) -> models.SparseVector:
    return models.SparseVector(indices=list(vector.indices), values=list(vector.values))


class QdrantIndex:
    """`VectorIndex` over one Qdrant collection shared by all users and levels."""

    def __init__(
        self,
        client: AsyncQdrantClient,
        collection: str,
        dim: int,
        *,
        lexical_half_score: float = LEXICAL_HALF_SCORE,
    ) -> None:
        if lexical_half_score <= 0:
            raise ValueError("lexical_half_score must be positive")
        self._client = client
        self._collection = collection
        self._dim = dim
        self._half = lexical_half_score

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
        schemas: dict[str, models.PayloadSchemaType | models.KeywordIndexParams] = {
            "user_id": models.KeywordIndexParams(
                type=models.KeywordIndexType.KEYWORD, is_tenant=True
            ),
            "level": models.PayloadSchemaType.INTEGER,
            "t_end": models.PayloadSchemaType.FLOAT,
        }
        # Local mode ignores payload indexes and warns once; the indexes matter on a server,
        # so create them anyway and silence only that one message. Idempotent on a server.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_LOCAL_INDEX_WARNING, category=UserWarning)
            for field, schema in schemas.items():
                await self._client.create_payload_index(
                    self._collection, field_name=field, field_schema=schema, wait=True
                )

    async def upsert(self, memories: Sequence[IndexedMemory]) -> None:
        """Write or overwrite nodes by id (same id -> same point, so replays never duplicate)."""
        if not memories:
            return
        points = [
            models.PointStruct(
                id=m.node.id,
                vector={DENSE: list(m.dense), LEXICAL: _to_qdrant_sparse(m.sparse)},
                payload=node_payload(m.node),
            )
            for m in memories
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
        if not 0.0 <= dense_weight <= 1.0:
            raise ValueError("dense_weight must be in [0, 1]")
        flt = _user_filter(user_id, level)
        depth = max(limit * PREFETCH_FACTOR, MIN_PREFETCH)
        # The filter goes on each prefetch as well as on top: the limits must apply to this
        # user's candidates, whatever the server's filter propagation does.
        prefetch = [models.Prefetch(query=list(dense), using=DENSE, filter=flt, limit=depth)]
        terms: list[models.Expression] = [models.MultExpression(mult=[dense_weight, "$score[0]"])]
        if sparse.indices:
            prefetch.append(
                models.Prefetch(
                    query=_to_qdrant_sparse(sparse), using=LEXICAL, filter=flt, limit=depth
                )
            )
            saturated = models.DivExpression(
                div=models.DivParams(
                    left="$score[1]",
                    right=models.SumExpression(sum=["$score[1]", self._half]),
                    by_zero_default=0.0,
                )
            )
            terms.append(models.MultExpression(mult=[1.0 - dense_weight, saturated]))
        response = await self._client.query_points(
            self._collection,
            prefetch=prefetch,
            query=models.FormulaQuery(
                formula=models.SumExpression(sum=terms),
                # A point missing from one prefetch scores 0 there (explicit, so local mode
                # and server agree).
                defaults={"$score[0]": 0.0, "$score[1]": 0.0},
            ),
            query_filter=flt,
            limit=limit,
            with_payload=False,
        )
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
        found = {str(r.id): dict(r.payload or {}) for r in records}
        if user_id is None:
            return found
        return {i: p for i, p in found.items() if p.get("user_id") == user_id}

    async def count(self, user_id: str, level: Level | None = None) -> int:
        result = await self._client.count(
            self._collection, count_filter=_user_filter(user_id, level), exact=True
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
            points_selector=models.FilterSelector(filter=_user_filter(user_id)),
            wait=True,
        )
        return removed
