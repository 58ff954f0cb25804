"""The adapters of one process: `connect` opens the Redis, Qdrant and broker clients that
settings name and hands them over as a `Container`, closing them all on exit.

Packages that only development installs have (qdrant-edge, the local model) are imported
where settings choose them, never at import time; nor are the clients a worker does not use
by default (qdrant-client's HTTP client, openai): a worker's imports are on the path of
every restart.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from memstream import faults
from memstream.adapters.embedding.embedders import build_embedder
from memstream.adapters.embedding.priority import PriorityEmbedder
from memstream.adapters.embedding.recent import KnownVectorsFirst, RecentVectors
from memstream.adapters.kafka.producer import KafkaPublisher
from memstream.adapters.llm.fallback import build_language_model
from memstream.adapters.qdrant.remote import RemoteIndex
from memstream.adapters.redis.connection import RedisClient, open_client, open_pool
from memstream.adapters.redis.tree import RedisTree
from memstream.contracts.catalog import Catalog, load_catalog
from memstream.domain.forgetting import Tombstone, lifetime_s
from memstream.edges.instrumentation import fallback_hook, store_error_hook, usage_hook
from memstream.edges.sealing import SealingPublisher
from memstream.metrics import Metrics
from memstream.ports import DataKeys, Embedder, LanguageModel, Publisher
from memstream.settings import Settings

if TYPE_CHECKING:
    from memstream.adapters.qdrant.edge import EdgeIndex
    from memstream.adapters.qdrant.server import QdrantIndex

    Index: TypeAlias = QdrantIndex | EdgeIndex | RemoteIndex


# How long an API process waits for the index server of the process that owns the index.
INDEX_SERVER_WAIT_S = 300.0


@dataclass(frozen=True)
class Container:
    """The connected adapters of one process, shared by every part it runs.

    `priority` is set when the segmenter and the consolidator share the process (and the
    embedder): then the online path (segmenter, recall) embeds ahead of consolidation.
    `clock` is the wall clock of the segmenter and the scheduler (a test moves it on).
    """

    settings: Settings
    catalog: Catalog
    tree: RedisTree
    index: Index
    embedder: Embedder
    llm: LanguageModel
    publisher: Publisher
    priority: PriorityEmbedder | None = None
    # Set when the segmenter and recall share the process, or when recall asks the
    # segmenter's process (`handoff.index_server`): a query the segmenter has just embedded
    # as a message is not embedded again (`adapters.embedding.recent`).
    recent: RecentVectors | KnownVectorsFirst | None = None
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    # Called after the segmenter of this process marks its progress: the recall API of the
    # same process (`memstream up`) wakes the reads waiting for it (`recall.writes`).
    # Each is told the marks of one turns topic, and the topic (None: the shared one).
    progress_listeners: list[Callable[[Mapping[int, int], str | None], None]] = field(
        default_factory=list
    )

    def progress_marked(self, marks: Mapping[int, int], topic: str | None = None) -> None:
        for listener in self.progress_listeners:
            listener(marks, topic)

    @property
    def online_embedder(self) -> Embedder:
        if self.recent is not None:
            return self.recent
        return self.priority.urgent if self.priority is not None else self.embedder

    @property
    def background_embedder(self) -> Embedder:
        return self.priority.background if self.priority is not None else self.embedder

    async def forget_user(self, user_id: str, tombstone: Tombstone | None = None) -> dict[str, int]:
        """Remove a user from both stores and leave a tombstone; returns what went where.

        Redis first, tombstone included, then Qdrant: from the tombstone on no commit can
        write the user again, and a consolidation that indexed its points before the Qdrant
        delete loses them there, one that indexed them after deletes them itself when its
        guarded commit is refused. The tombstone lasts as long as a replay could bring back
        something older than the forget (`domain.forgetting`).
        """
        stone = tombstone or Tombstone(forgotten_at=time.time())
        ttl_s = lifetime_s(self.catalog.turns.retention_ms, self.catalog.windows.retention_ms)
        forgotten = await self.tree.forget(user_id, stone, ttl_s)
        faults.reach("forget.after_redis")
        points = await self.index.delete_user(user_id)
        if self.settings.lifecycle.forget_compaction:
            # The files next: the index's segments and Redis's persistence still hold the
            # user's words (docs/forget-everywhere.md).
            await self.index.vacuum()
            await self.tree.rewrite_files()
        return {
            "qdrant_points": points,
            "redis_keys": forgotten.redis_keys,
            "nodes": forgotten.nodes,
            # -1: the tombstone stays, as a topic keeps its records forever
            "tombstone_ttl_s": -1 if ttl_s is None else ttl_s,
        }


@asynccontextmanager
async def connect(
    settings: Settings,
    metrics: Metrics | None = None,
    *,
    producer: bool = True,
    prioritise_online: bool = False,
    recent_vectors: int = 0,
    warm_connections: bool = False,
) -> AsyncIterator[Container]:
    """Connect to the Redis, Qdrant and broker `settings` name; close them all on exit.

    With `metrics`, the LLM reports its usage and fallbacks there. `producer=False` leaves
    the publisher unstarted (a reader that never publishes). `prioritise_online`: see
    `Container`. `recent_vectors`: how many texts the online path keeps the vectors of (0:
    none; `Container.recent`). `warm_connections`: open the Redis connections a burst of
    requests needs now (`open_pool`): for the serving processes, not for one-shot commands
    that send a few commands on one connection.
    """
    if not settings.redis.url or not settings.broker.bootstrap:
        raise ValueError("connect needs kafka_bootstrap and redis_url (use the embedded stack)")
    async with AsyncExitStack() as stack:
        redis = open_redis(settings)
        stack.push_async_callback(redis.aclose)
        if warm_connections:
            await open_pool(redis, settings.redis.connections)
        embedder = build_embedder(settings)
        tree = redis_tree(redis, settings, metrics)
        index = await open_index(
            settings,
            settings.qdrant.collection,
            embedder.dim,
            stack,
            keys=index_keys(tree, settings),
        )
        publisher = KafkaPublisher.for_service(settings.broker.bootstrap)
        if producer:
            await publisher.start()
            stack.push_async_callback(publisher.stop)
        catalog = load_catalog(settings.broker.topic_prefix)
        priority = PriorityEmbedder(embedder) if prioritise_online else None
        online = priority.urgent if priority is not None else embedder
        container = Container(
            settings=settings,
            catalog=catalog,
            tree=tree,
            index=index,
            embedder=embedder,
            llm=build_language_model(
                settings,
                on_usage=usage_hook(metrics) if metrics else None,
                on_fallback=fallback_hook(metrics) if metrics else None,
            ),
            publisher=sealed(publisher, tree, catalog, settings),
            priority=priority,
            recent=recent_first(index, online, recent_vectors),
        )
        if isinstance(index, RemoteIndex):
            # The index's owner runs the segmenter: its marks wake this process's reads.
            index.announce_progress_to(container.progress_marked)
        yield container


def recent_first(
    index: Index, online: Embedder, kept: int
) -> RecentVectors | KnownVectorsFirst | None:
    """What the online path embeds through first: the vectors this process keeps (`kept`
    texts), or those the index's owner keeps when the index is another process's."""
    if isinstance(index, RemoteIndex):
        return KnownVectorsFirst(online, index.recent_vectors)
    return RecentVectors(online, kept) if kept else None


def open_redis(settings: Settings) -> RedisClient:
    """The Redis client the settings name: a single primary's, or a cluster's."""
    return open_client(settings.redis.url, cluster=settings.redis.cluster)


def sealed(
    publisher: Publisher, tree: RedisTree, catalog: Catalog, settings: Settings
) -> Publisher:
    """The publisher every part of a process uses: sealing the users' words unless settings
    turn it off (docs/forget-everywhere.md)."""
    if not settings.lifecycle.seal_topics:
        return publisher
    return SealingPublisher(
        publisher, tree, memories_topic=catalog.memories.name, dlq_topic=catalog.dlq.name
    )


def index_keys(tree: RedisTree, settings: Settings) -> DataKeys | None:
    """What the index seals its payloads' words with: the users' data keys, unless settings
    turn it off."""
    return tree if settings.lifecycle.seal_index else None


def redis_tree(redis: RedisClient, settings: Settings, metrics: Metrics | None = None) -> RedisTree:
    """The tree store on `redis`, with the settings' namespace, layout and cache bounds;
    with `metrics`, its failed commands counted by kind."""
    return RedisTree(
        redis,
        settings.redis.namespace,
        cluster=settings.redis.cluster,
        on_error=store_error_hook(metrics) if metrics else None,
        node_cache_size=settings.redis.node_cache,
        node_cache_bytes=settings.redis.node_cache_mb * 1024 * 1024,
        knowledge_cache_users=settings.redis.knowledge_cache_users,
        wait_replicas=settings.redis.wait_replicas,
        wait_timeout_ms=settings.redis.wait_timeout_ms,
    )


def qdrant_edge_dir(settings: Settings) -> Path:
    """Where the in-process Qdrant engine (qdrant-edge) keeps its shards without `qdrant_url`."""
    return settings.data_dir.resolve() / "qdrant-edge"


async def open_index(
    settings: Settings,
    collection: str,
    dim: int,
    stack: AsyncExitStack,
    *,
    keys: DataKeys | None = None,
) -> Index:
    """QdrantIndex on the configured server, else an in-process qdrant-edge shard in data_dir.

    qdrant-client's local mode filters in Python, point by point; qdrant-edge is Qdrant's own
    engine in-process, from the `embedded` extra. `stack` closes either. With `keys`, the
    payloads' words are sealed under the users' data keys (`index_keys`).
    """
    index: Index
    if settings.handoff.index_server is not None:
        # Another process owns the index (`memstream up` with its API apart), and may still
        # be starting: the first call waits for it, so this process starts meanwhile.
        index = RemoteIndex(
            settings.handoff.index_server,
            dim,
            connect_timeout_s=INDEX_SERVER_WAIT_S,
            vectors_kept=max(1, settings.embedding.recent_vectors),
        )
        stack.push_async_callback(index.close)
        return index
    # The adapter's module is imported in a thread: importing qdrant-client's models is CPU
    # work the event loop need not wait for; it goes on with what else is starting (the
    # runner starts the consumer's group join before it connects).
    adapter = "server" if settings.qdrant.url else "edge"
    try:
        await asyncio.to_thread(importlib.import_module, f"memstream.adapters.qdrant.{adapter}")
    except ImportError as exc:
        if settings.qdrant.url:
            raise
        raise RuntimeError(
            "MEMSTREAM_QDRANT_URL is not set and Qdrant's in-process engine is not "
            "installed (pip install 'memstream[embedded]')"
        ) from exc
    if settings.qdrant.url:
        # Imported here: a worker on the in-process engine never loads qdrant-client's HTTP
        # client, a large import on the path of every start.
        from qdrant_client import AsyncQdrantClient

        from memstream.adapters.qdrant.server import QdrantIndex

        key = settings.qdrant.api_key.get_secret_value() if settings.qdrant.api_key else None
        client = AsyncQdrantClient(url=settings.qdrant.url, api_key=key)
        stack.push_async_callback(client.close)
        index = QdrantIndex(client, collection, dim, keys=keys)
    else:
        from memstream.adapters.qdrant.edge import EdgeIndex

        # One shard directory per collection; loading reads its segments, so off the loop.
        path = qdrant_edge_dir(settings) / collection
        held = settings.qdrant
        opening = partial(
            EdgeIndex.open,
            path,
            dim,
            keys=keys,
            leaf_vectors_mb=held.leaf_vectors_mb,
            leaf_vectors_from=held.leaf_vectors_from,
            leaf_vectors_probe=held.leaf_vectors_probe,
            search_threads=held.search_threads,
        )
        index = await asyncio.to_thread(opening)
        stack.push_async_callback(index.close)
    await index.ensure_collection()
    return index
