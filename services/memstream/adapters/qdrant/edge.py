"""The vector index on a Qdrant Edge shard: Qdrant's engine in-process, for the embedded stack.

Same layout, payload and fused leaf score as `qdrant_index.QdrantIndex` (its docstring explains
the formula); this module maps them onto `qdrant-edge-py`. Local-mode qdrant-client evaluates
every filter in Python over every point (about 1 s per recall at 17k points); the edge engine
filters through a tenant payload index and scores in Rust.

- One shard per collection, in its own directory. The shard owns that directory: one open
  `EdgeShard` at a time, in this process or another (a second open fails to lock the
  write-ahead log), so `close()` must run before the next open. Updates go to the WAL first
  and survive a crash without a flush (checked by killing a writer with `os._exit`).
- IDF: the sparse vector keeps `Modifier.Idf`, computed by the engine over the whole shard, as on
  a server. As on a server, deleted points go on counting there until an optimisation vacuums
  them; overwrites do not.
- Leaf search is one engine call: two filtered prefetches rescored by a `Formula`.
- The engine is synchronous and releases the GIL. Calls measured at more than about 1 ms run
  in a worker thread so the event loop keeps serving: a search (~3 ms for a user with 10k
  points among 20k), a count (~1.5 ms at 10k), a delete, a large upsert, flush. Reads by id
  (~0.1 ms for 10) and small upserts (~0.1 ms a point) run inline, where a thread hop would
  cost more than the call.
- Nothing calls `optimize()`: without it every point stays in plain segments, searched exactly
  over the user's points found through the `user_id` payload index, which is fast enough at
  this scale (without that index a search scans the whole shard: ~130 ms at 20k points).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qdrant_edge import (
    CountRequest,
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeSparseVectorParams,
    EdgeVectorParams,
    Expression,
    FieldCondition,
    Filter,
    Formula,
    KeywordIndexParams,
    MatchValue,
    Modifier,
    PayloadSchemaType,
    Point,
    Prefetch,
    Query,
    QueryRequest,
    UpdateOperation,
)
from qdrant_edge import SparseVector as EdgeSparse

from memstream.adapters.qdrant.server import (
    DENSE,
    LEXICAL,
    LEXICAL_HALF_SCORE,
    MIN_PREFETCH,
    PREFETCH_FACTOR,
    node_payload,
)
from memstream.domain.models import IndexedMemory, Level, ScoredId, SparseVector

# Written by `EdgeShard.create`; its presence tells an existing shard from a new directory.
_CONFIG_FILE = "edge_config.json"
# Upserts of more points than this go to a worker thread (measured: ~0.1 ms a point).
_INLINE_UPSERT_POINTS = 8


def _config(dim: int) -> EdgeConfig:
    return EdgeConfig(
        vectors={DENSE: EdgeVectorParams(size=dim, distance=Distance.Cosine)},
        sparse_vectors={LEXICAL: EdgeSparseVectorParams(modifier=Modifier.Idf)},
    )


def _user_filter(user_id: str, level: Level | None = None) -> Filter:
    must: list[Any] = [FieldCondition(key="user_id", match=MatchValue(user_id))]
    if level is not None:
        must.append(FieldCondition(key="level", match=MatchValue(int(level))))
    return Filter(must=must)


def _to_edge_sparse(vector: SparseVector) -> EdgeSparse:
    return EdgeSparse(indices=list(vector.indices), values=list(vector.values))


def _payload_indexes() -> dict[str, Any]:
    return {
        # Every query filters on the user: with this index the engine reads that user's points
        # instead of scanning the shard. `is_tenant` as on a server (it shapes optimised segments).
        "user_id": KeywordIndexParams(is_tenant=True),
        "level": PayloadSchemaType.Integer,
        "t_end": PayloadSchemaType.Float,
    }


def _open_shard(path: Path, dim: int) -> EdgeShard:
    """Load the shard at `path`, or create it there; ValueError if its dense size is not `dim`."""
    config = _config(dim)
    if not (path / _CONFIG_FILE).exists():
        path.mkdir(parents=True, exist_ok=True)
        return EdgeShard.create(str(path), config)
    try:
        # With a config, load checks it against the stored segments.
        return EdgeShard.load(str(path), config)
    except Exception as exc:  # the bindings raise a bare Exception
        if "ncompatible" in str(exc):
            raise ValueError(
                f"qdrant-edge shard {path} does not fit dense size {dim}: {exc}"
            ) from exc
        raise


class EdgeIndex:
    """`VectorIndex` over one Qdrant Edge shard shared by all users and levels."""

    def __init__(self, shard: EdgeShard, *, lexical_half_score: float = LEXICAL_HALF_SCORE) -> None:
        if lexical_half_score <= 0:
            raise ValueError("lexical_half_score must be positive")
        self._shard = shard
        self._half = lexical_half_score

    @classmethod
    def open(
        cls, path: Path, dim: int, *, lexical_half_score: float = LEXICAL_HALF_SCORE
    ) -> EdgeIndex:
        """The index on the shard at `path` (created if missing); the caller must `close()` it."""
        return cls(_open_shard(path, dim), lexical_half_score=lexical_half_score)

    async def ensure_collection(self) -> None:
        """Create the payload indexes if missing (the shard and its size are checked at open)."""
        present = self._shard.info().payload_schema
        for field, schema in _payload_indexes().items():
            if field not in present:
                # Indexing the points already stored can take a while on a large shard.
                operation = UpdateOperation.create_field_index(field, schema)
                await asyncio.to_thread(self._shard.update, operation)

    async def close(self) -> None:
        """Write segments to disk and release the directory (the WAL alone would also recover)."""
        await asyncio.to_thread(self._shard.flush)
        self._shard.close()

    async def ping(self) -> bool:
        """The shard is open (a readiness probe)."""
        self._shard.info()
        return True

    async def upsert(self, memories: Sequence[IndexedMemory]) -> None:
        """Write or overwrite nodes by id (same id -> same point, so replays never duplicate)."""
        if not memories:
            return
        points = [
            Point(
                m.node.id,
                {DENSE: list(m.dense), LEXICAL: _to_edge_sparse(m.sparse)},
                node_payload(m.node),
            )
            for m in memories
        ]
        operation = UpdateOperation.upsert_points(points)
        if len(points) > _INLINE_UPSERT_POINTS:
            await asyncio.to_thread(self._shard.update, operation)
        else:
            self._shard.update(operation)

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
        prefetches = [
            Prefetch(limit=depth, query=Query.Nearest(list(dense), using=DENSE), filter=flt)
        ]
        terms = [Expression.Mult([Expression.Constant(dense_weight), _score(0)])]
        if sparse.indices:
            prefetches.append(
                Prefetch(
                    limit=depth,
                    query=Query.Nearest(_to_edge_sparse(sparse), using=LEXICAL),
                    filter=flt,
                )
            )
            saturated = Expression.Div(
                _score(1),
                Expression.Sum([_score(1), Expression.Constant(self._half)]),
                by_zero_default=0.0,
            )
            terms.append(Expression.Mult([Expression.Constant(1.0 - dense_weight), saturated]))
        request = QueryRequest(
            limit=limit,
            prefetches=prefetches,
            # A point missing from one prefetch scores 0 there, as in QdrantIndex.
            query=Formula(Expression.Sum(terms), defaults={"$score[0]": 0.0, "$score[1]": 0.0}),
            filter=flt,
            with_payload=False,
            with_vector=False,
        )
        points = await asyncio.to_thread(self._shard.query, request)
        return [ScoredId(id=str(p.id), score=float(p.score)) for p in points]

    async def get(
        self, ids: Sequence[str], *, user_id: str | None = None
    ) -> dict[str, dict[str, Any]]:
        """Payloads of the given ids that exist; with `user_id`, other users' points are dropped."""
        if not ids:
            return {}
        records = self._shard.retrieve(list(ids), with_payload=True, with_vector=False)
        found = {str(r.id): dict(r.payload or {}) for r in records}
        if user_id is None:
            return found
        return {i: p for i, p in found.items() if p.get("user_id") == user_id}

    async def count(self, user_id: str, level: Level | None = None) -> int:
        request = CountRequest(exact=True, filter=_user_filter(user_id, level))
        return await asyncio.to_thread(self._shard.count, request)

    async def delete_user(self, user_id: str) -> int:
        """Remove every point of a user; returns how many there were just before the delete.

        As in QdrantIndex, a point written between the count and the delete is deleted but not
        counted; forget requests are rare and the delete itself is complete.
        """
        return await asyncio.to_thread(self._delete_user, user_id)

    def _delete_user(self, user_id: str) -> int:
        flt = _user_filter(user_id)
        removed = self._shard.count(CountRequest(exact=True, filter=flt))
        self._shard.update(UpdateOperation.delete_points_by_filter(flt))
        return removed


def _score(prefetch: int) -> Expression:
    return Expression.Variable(f"$score[{prefetch}]")
