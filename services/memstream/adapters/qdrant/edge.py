"""The vector index on a Qdrant Edge shard: Qdrant's engine in-process, for the embedded stack.

It sends what `query.py` builds for `QdrantIndex` (the same filters and fused leaf query,
translated one to one from qdrant-client models into `qdrant-edge-py` objects by
`edge_translation.py`, and the same points, which that module builds straight from the
memory); the calls are the only difference. Local-mode qdrant-client evaluates
every filter in Python over every point, too slow for recall at thousands; the edge engine
filters through a tenant payload index and scores in Rust.

- One shard per collection, in its own directory. The shard owns that directory: one open
  `EdgeShard` at a time, in this process or another (a second open fails to lock the
  write-ahead log), so `close()` must run before the next open. Updates go to the WAL first
  and survive a crash without a flush (checked by killing a writer with `os._exit`).
- IDF: the sparse vector keeps `Modifier.Idf`, computed by the engine over the whole shard, as on
  a server. As on a server, deleted points go on counting there until an optimisation vacuums
  them; overwrites do not.
- The engine is synchronous and releases the GIL for much of its work (a thread running
  upserts leaves the main thread most of its pace). Calls that take long against a thread hop
  run in a worker thread so the event loop keeps serving: a search, a count, a delete, a
  large upsert, flush. Reads by id and small upserts run inline, where a thread hop would
  cost more than the call.
- New shards store the dense vectors as float16. A search scans every vector of the user
  (below), and that scan is bound by memory reads: 10k points of 384 float32 are 15 MB a
  query. Half the bytes make the dense search markedly faster with the same top 100; a
  score moves in its fourth decimal. A shard written
  before keeps the datatype it was created with (read from its config file), since the
  engine refuses to open one with another.
- Only a forget calls `optimize()` (`vacuum`), with an indexing threshold no segment reaches:
  every point stays in plain segments, searched exactly over the user's points found through
  the `user_id` payload index, which is fast enough at this scale (without that index a
  search scans the whole shard, every user's points). For a user of many points the dense
  prefetch is narrowed to the ids a product over the user's vectors held in process picks
  (`leaf_vectors.py`); the engine still computes every score.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from qdrant_edge import (
    CountRequest,
    Distance,
    EdgeConfig,
    EdgeOptimizersConfig,
    EdgeShard,
    EdgeSparseVectorParams,
    EdgeVectorParams,
    FacetRequest,
    Modifier,
    ScrollRequest,
    UpdateOperation,
    VectorStorageDatatype,
)

from memstream.adapters.qdrant.edge_translation import (
    edge_filter,
    edge_index_schema,
    edge_memory_point,
    edge_request,
)
from memstream.adapters.qdrant.leaf_vectors import LeafVectors
from memstream.adapters.qdrant.query import (
    DENSE,
    LEXICAL,
    LEXICAL_HALF_SCORE,
    PAYLOAD_INDEXES,
    leaf_query,
    payloads_by_id,
    prefetch_depth,
    user_filter,
)
from memstream.adapters.qdrant.sealing import PayloadKeys, opened_node, payload_version
from memstream.domain.models import IndexedMemory, Level, MemoryNode, ScoredId, SparseVector
from memstream.ports import DataKeys

# Written by `EdgeShard.create`; its presence tells an existing shard from a new directory.
_CONFIG_FILE = "edge_config.json"
# What new shards store their dense vectors as (see the module's docstring).
NEW_SHARD_DATATYPE = VectorStorageDatatype.Float16
_DATATYPES = {
    "float32": VectorStorageDatatype.Float32,
    "float16": VectorStorageDatatype.Float16,
}
# A user's vectors are read from the shard this many points a call: the bindings hand each
# page over as Python floats holding the GIL, so a small page keeps the event loop's waits
# short while a heavy user is read.
_LOAD_PAGE = 256
# Upserts of more points than this go to a worker thread: below it the thread hop would cost
# more than the upsert (the bound predates the packed payload, which made points cheaper).
_INLINE_UPSERT_POINTS = 8
# A leaf search of a user known to have at most this many points of the level runs in the
# event loop: the thread hop (hand-off, wake-ups, the loop woken with the answer) costs the
# process more CPU than such a search, and the answer comes no later (docs/read-your-writes.md).
_INLINE_SEARCH_POINTS = 1_024


def _config(
    dim: int, datatype: VectorStorageDatatype, search_threads: int | None = None
) -> EdgeConfig:
    dense = EdgeVectorParams(size=dim, distance=Distance.Cosine, datatype=datatype)
    return EdgeConfig(
        vectors={DENSE: dense},
        sparse_vectors={LEXICAL: EdgeSparseVectorParams(modifier=Modifier.Idf)},
        optimizers=_VACUUM_EVERY_DELETE,
        max_search_threads=search_threads,
    )


# What `vacuum` runs with: any deleted point makes its segment worth rewriting, whatever its
# size (the engine's defaults wait for a fifth of a segment of at least 1,000 vectors), and
# no segment is large enough to get an HNSW graph (searches stay exact, as before).
_VACUUM_EVERY_DELETE = EdgeOptimizersConfig(
    deleted_threshold=0.0, vacuum_min_vector_number=0, indexing_threshold=2**30
)


def _stored_datatype(config_file: Path) -> VectorStorageDatatype:
    """The dense datatype an existing shard was created with (float32 before it was named)."""
    dense = json.loads(config_file.read_text()).get("vectors", {}).get(DENSE, {})
    stored = dense.get("datatype") or "float32"
    if stored not in _DATATYPES:
        raise ValueError(f"qdrant-edge shard {config_file.parent} stores {stored} vectors")
    return _DATATYPES[stored]


def _open_shard(path: Path, dim: int, search_threads: int | None = None) -> EdgeShard:
    """Load the shard at `path`, or create it there; ValueError if its dense size is not `dim`.
    `search_threads`: the engine's search pool (None: the shard's, else the engine's own)."""
    config_file = path / _CONFIG_FILE
    if not config_file.exists():
        path.mkdir(parents=True, exist_ok=True)
        return EdgeShard.create(str(path), _config(dim, NEW_SHARD_DATATYPE, search_threads))
    config = _config(dim, _stored_datatype(config_file), search_threads)
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

    def __init__(
        self,
        shard: EdgeShard,
        *,
        lexical_half_score: float = LEXICAL_HALF_SCORE,
        keys: DataKeys | None = None,
        leaf_vectors: LeafVectors | None = None,
    ) -> None:
        """`keys`: the users' data keys, to seal the words of the payloads (`sealing.py`);
        `leaf_vectors`: users' dense vectors held to narrow the dense search (none: every
        search scans the user's points)."""
        if lexical_half_score <= 0:
            raise ValueError("lexical_half_score must be positive")
        self._shard = shard
        self._half = lexical_half_score
        self._keys = PayloadKeys(keys)
        self._vectors = leaf_vectors or LeafVectors(0)

    @classmethod
    def open(
        cls,
        path: Path,
        dim: int,
        *,
        lexical_half_score: float = LEXICAL_HALF_SCORE,
        keys: DataKeys | None = None,
        leaf_vectors_mb: int = 0,
        leaf_vectors_from: int = 0,
        leaf_vectors_probe: int = 0,
        search_threads: int | None = None,
    ) -> EdgeIndex:
        """The index on the shard at `path` (created if missing); the caller must `close()` it.
        `leaf_vectors_mb`: memory for the dense vectors of users of `leaf_vectors_from`
        points or more, held in process (`leaf_vectors.py`), a search scoring the nearest
        cells' `leaf_vectors_probe` rows of them (0: all); `search_threads`: the engine's
        search pool (None: the engine's own count)."""
        return cls(
            _open_shard(path, dim, search_threads),
            lexical_half_score=lexical_half_score,
            keys=keys,
            leaf_vectors=LeafVectors(
                leaf_vectors_mb * 2**20, leaf_vectors_from, probe=leaf_vectors_probe
            ),
        )

    async def ensure_collection(self) -> None:
        """Create the payload indexes if missing (the shard and its size are checked at open)."""
        present = self._shard.info().payload_schema
        for field, schema in PAYLOAD_INDEXES.items():
            if field not in present:
                # Indexing the points already stored can take a while on a large shard.
                operation = UpdateOperation.create_field_index(field, edge_index_schema(schema))
                await asyncio.to_thread(self._shard.update, operation)

    async def close(self) -> None:
        """Write segments to disk and release the directory (the WAL alone would also recover)."""
        await asyncio.to_thread(self._vectors.finish_reads)
        await asyncio.to_thread(self._shard.flush)
        self._shard.close()

    async def ping(self) -> bool:
        """The shard is open (a readiness probe)."""
        self._shard.info()
        return True

    async def upsert(self, memories: Sequence[IndexedMemory]) -> None:
        """Write or overwrite nodes by id (same id -> same point, so replays never duplicate)."""
        memories, found = await self._keys.for_writing(memories)
        if not memories:
            return
        points = [edge_memory_point(m, found.get(m.node.user_id)) for m in memories]
        # Before the engine: a search in between finds the new rows, whose ids the engine
        # does not hold yet, rather than miss them.
        self._vectors.upserted(memories)
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
        arguments = (user_id, dense, sparse, limit, dense_weight, level)
        if self._vectors.at_most((user_id, int(level)), _INLINE_SEARCH_POINTS):
            points = self._search(*arguments)
        else:
            points = await asyncio.to_thread(self._search, *arguments)
        return [ScoredId(id=str(p.id), score=float(p.score)) for p in points]

    def _search(
        self,
        user_id: str,
        dense: Sequence[float],
        sparse: SparseVector,
        limit: int,
        dense_weight: float,
        level: Level,
    ) -> list[Any]:
        among = self._vectors.candidates(
            (user_id, int(level)),
            dense,
            prefetch_depth(limit),
            lambda: self._count(user_id, level),
            lambda: self._dense_vectors(user_id, level),
        )
        request = leaf_query(
            user_id,
            dense,
            sparse,
            limit=limit,
            dense_weight=dense_weight,
            level=level,
            lexical_half_score=self._half,
            dense_among=among,
        )
        points: list[Any] = self._shard.query(edge_request(request))
        return points

    def _dense_vectors(
        self, user_id: str, level: Level
    ) -> Iterator[tuple[list[str], list[list[float]]]]:
        """Every point of the user and level with its dense vector, as the shard stores it,
        a page at a time."""
        flt = edge_filter(user_filter(user_id, level))
        after = None
        while True:
            request = ScrollRequest(
                offset=after, limit=_LOAD_PAGE, filter=flt, with_payload=False, with_vector=[DENSE]
            )
            records, after = self._shard.scroll(request)
            named: list[Any] = [r.vector for r in records]
            yield [str(r.id) for r in records], [v[DENSE] for v in named]
            if after is None:
                return

    async def get(
        self, ids: Sequence[str], *, user_id: str | None = None
    ) -> dict[str, dict[str, Any]]:
        """Payloads of the given ids that exist; with `user_id`, other users' points are dropped."""
        if not ids:
            return {}
        records = self._shard.retrieve(list(ids), with_payload=True, with_vector=False)
        return payloads_by_id(records, user_id)

    async def count(self, user_id: str, level: Level | None = None) -> int:
        return await asyncio.to_thread(self._count, user_id, level)

    def _count(self, user_id: str, level: Level | None) -> int:
        request = CountRequest(exact=True, filter=edge_filter(user_filter(user_id, level)))
        counted: int = self._shard.count(request)
        return counted

    async def delete_user(self, user_id: str) -> int:
        """Remove every point of a user; returns how many there were just before the delete.

        As in QdrantIndex, a point written between the count and the delete is deleted but not
        counted; forget requests are rare and the delete itself is complete.
        """
        # Before and after: no search in between holds an id the engine no longer has.
        self._vectors.forget(user_id)
        try:
            return await asyncio.to_thread(self._delete_user, user_id)
        finally:
            self._vectors.forget(user_id)

    def _delete_user(self, user_id: str) -> int:
        flt = edge_filter(user_filter(user_id))
        removed = self._shard.count(CountRequest(exact=True, filter=flt))
        self._shard.update(UpdateOperation.delete_points_by_filter(flt))
        return removed

    async def vacuum(self) -> None:
        """Rewrite the segments that hold deleted points without them, and flush: a forgotten
        user's payloads leave the segment files (the write-ahead log keeps its records until
        it rolls over: docs/forget-everywhere.md)."""
        await asyncio.to_thread(self._vacuum)

    def _vacuum(self) -> None:
        self._shard.optimize()
        self._shard.flush()

    async def delete_points(self, user_id: str, point_ids: Sequence[str]) -> None:
        """Remove these points (node ids are uuid5 of the user and more: one user's each)."""
        if point_ids:
            self._vectors.forget(user_id)
            self._shard.update(UpdateOperation.delete_points(list(point_ids)))
            self._vectors.forget(user_id)

    # What noticing and repairing a lost store reads (`ports.repair.IndexScan`).

    async def total(self) -> int:
        return await asyncio.to_thread(self._shard.count, CountRequest(exact=False))

    async def users_with_points(self, limit: int) -> list[str]:
        """Users holding points, through the tenant index's facet."""
        request = FacetRequest("user_id", limit=limit, exact=True)
        reply = await asyncio.to_thread(self._shard.facet, request)
        return [str(hit.value) for hit in reply.hits]

    async def user_nodes(
        self, user_id: str, after: str | None, limit: int
    ) -> tuple[list[MemoryNode], str | None]:
        request = ScrollRequest(
            offset=after,
            limit=limit,
            filter=edge_filter(user_filter(user_id)),
            with_payload=True,
            with_vector=False,
        )
        records, following = await asyncio.to_thread(self._shard.scroll, request)
        key = (await self._keys.for_reading([user_id])).get(user_id)
        nodes = [opened_node(str(r.id), dict(r.payload or {}), key) for r in records]
        return nodes, None if following is None else str(following)

    async def versions(self, user_id: str, node_ids: Sequence[str]) -> dict[str, int]:
        payloads = await self.get(node_ids, user_id=user_id)
        return {i: payload_version(i, p) for i, p in payloads.items()}
