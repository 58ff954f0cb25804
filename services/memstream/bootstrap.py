"""The one place that builds clients and adapters from settings and wires the handlers."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import timedelta

import redis.asyncio as aioredis
from qdrant_client import AsyncQdrantClient

from memstream.adapters.embedding.embedders import build_embedder
from memstream.adapters.embedding.priority import PriorityEmbedder
from memstream.adapters.kafka.producer import KafkaPublisher
from memstream.adapters.llm.fallback import build_language_model
from memstream.adapters.qdrant.edge import EdgeIndex
from memstream.adapters.qdrant.server import QdrantIndex
from memstream.adapters.redis.tree import RedisTree
from memstream.consolidator.handler import Consolidator
from memstream.contracts.catalog import Catalog, load_catalog
from memstream.domain.windows import WindowRules
from memstream.entrypoints.faust.dead_letters import DeadLetters
from memstream.ports import Embedder, LanguageModel
from memstream.scheduler.clock import ClockTicker
from memstream.segmenter.handler import Segmenter, Topics
from memstream.settings import Settings
from memstream.tools.embedded.stack import qdrant_edge_path


@dataclass
class Runtime:
    """Connected adapters, shared by every part running in this process."""

    settings: Settings
    catalog: Catalog
    redis: aioredis.Redis
    tree: RedisTree
    index: Index
    embedder: Embedder
    llm: LanguageModel
    publisher: KafkaPublisher
    exit_stack: AsyncExitStack
    embedders: PriorityEmbedder = field(init=False)

    def __post_init__(self) -> None:
        # The segmenter's and the recall service's embeddings go before consolidation's.
        self.embedders = PriorityEmbedder(self.embedder)

    async def close(self) -> None:
        await self.exit_stack.aclose()

    async def open_index(self, collection: str) -> Index:
        """Another collection on the same store, closed with this runtime (evaluation)."""
        return await open_index(self.settings, collection, self.embedder.dim, self.exit_stack)

    def rules(self) -> WindowRules:
        s = self.settings
        return WindowRules(
            segment_messages=s.segment_messages,
            segment_by_exchange=s.segment_by == "exchange",
            session_idle=timedelta(seconds=s.session_idle_timeout_s),
            clock_grace=timedelta(seconds=s.clock_grace_s),
            default_tz=s.default_tz,
        )

    async def forget_user(self, user_id: str) -> dict[str, int]:
        """Remove a user from both stores; returns what was removed where."""
        points = await self.index.delete_user(user_id)
        keys = await self.tree.delete_user(user_id)
        return {"qdrant_points": points, "redis_keys": keys}

    def segmenter(self) -> Segmenter:
        c = self.catalog
        return Segmenter(
            tree=self.tree,
            index=self.index,
            embedder=self.embedders.urgent,
            llm=self.llm,
            publisher=self.publisher,
            topics=Topics(memories=c.memories.name, windows=c.windows.name),
            forget=self.forget_user,
            rules=self.rules(),
            history_window=self.settings.history_window,
            step_size=self.settings.consume_step_size,
        )

    def dead_letters(self) -> DeadLetters:
        return DeadLetters(self.publisher, self.catalog.dlq.name)

    def consolidator(self) -> Consolidator:
        return Consolidator(
            tree=self.tree,
            index=self.index,
            embedder=self.embedders.background,
            llm=self.llm,
            publisher=self.publisher,
            memories_topic=self.catalog.memories.name,
            history_window=self.settings.history_window,
        )

    def ticker(self) -> ClockTicker:
        return ClockTicker(
            tree=self.tree,
            publisher=self.publisher,
            turns_topic=self.catalog.turns.name,
            windows_topic=self.catalog.windows.name,
            retry_degraded=bool(self.settings.llm_base_url),
        )


Index = QdrantIndex | EdgeIndex


async def open_index(settings: Settings, collection: str, dim: int, stack: AsyncExitStack) -> Index:
    """QdrantIndex on the configured server, else an in-process qdrant-edge shard in data_dir.

    qdrant-client's local mode filters in Python (about 1 s per query at 10k memories);
    qdrant-edge is Qdrant's own engine in-process (milliseconds). `stack` closes either.
    """
    if settings.qdrant_url:
        key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        client = AsyncQdrantClient(url=settings.qdrant_url, api_key=key)
        stack.push_async_callback(client.close)
        index: Index = QdrantIndex(client, collection, dim)
    else:
        # One shard directory per collection; loading reads its segments, so off the loop.
        path = qdrant_edge_path(settings) / collection
        index = await asyncio.to_thread(EdgeIndex.open, path, dim)
        stack.push_async_callback(index.close)
    await index.ensure_collection()
    return index


async def open_runtime(settings: Settings, *, with_producer: bool = True) -> Runtime:
    """Connect to Redis, Qdrant and the broker named in `settings` (all must be set)."""
    if not settings.redis_url or not settings.kafka_bootstrap:
        raise ValueError(
            "open_runtime needs kafka_bootstrap and redis_url (use the embedded stack)"
        )
    stack = AsyncExitStack()
    try:
        redis = aioredis.from_url(settings.redis_url)
        stack.push_async_callback(redis.aclose)
        embedder = build_embedder(settings)
        index = await open_index(settings, settings.qdrant_collection, embedder.dim, stack)
        publisher = KafkaPublisher.for_bootstrap(settings.kafka_bootstrap)
        if with_producer:
            await publisher.start()
            stack.push_async_callback(publisher.stop)
        return Runtime(
            settings=settings,
            catalog=load_catalog(settings.topic_prefix),
            redis=redis,
            tree=RedisTree(redis, settings.redis_namespace),
            index=index,
            embedder=embedder,
            llm=build_language_model(settings),
            publisher=publisher,
            exit_stack=stack,
        )
    except BaseException:
        await stack.aclose()
        raise
