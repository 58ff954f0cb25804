"""The composition root: settings and metrics in; adapters, handlers, the Faust app and the
HTTP app out. Nothing built here is changed afterwards.

    app = write_path_app(settings, metrics, handlers, ...)   # may start before the stores
    async with connect(settings, metrics) as container:       # the connected adapters
        handlers.set_result(write_path_handlers(container, metrics, ...))
        # or: recall_app(container, metrics)

Import rule: this module imports the adapters, the handlers (segmenter, consolidator,
scheduler, recall), the contracts, and the edges it builds (`edges.faust.app`,
`edges.http.api`, `edges.instrumentation`); the edges never import it. The modules that
start a process (`entrypoints.runner` and the CLI commands) import it. Nothing
here imports the embedded stack (`memstream.entrypoints.embedded`). Packages that only
development installs have (qdrant-edge, the local model) are imported where settings choose
them, never at import time; nor are
the clients a worker does not use by default (qdrant-client's HTTP client, openai, the HTTP
server): a worker's imports are on the path of every restart.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import faust
import redis.asyncio as aioredis
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from memstream import faults
from memstream.adapters.embedding.embedders import build_embedder
from memstream.adapters.embedding.priority import PriorityEmbedder
from memstream.adapters.kafka.producer import KafkaPublisher
from memstream.adapters.llm.fallback import build_language_model
from memstream.adapters.llm.prompts import PROMPT_VERSION
from memstream.adapters.redis.connection import HiredisPackedConnection
from memstream.adapters.redis.tree import RedisTree
from memstream.consolidator.handler import Consolidator
from memstream.contracts.catalog import Catalog, load_catalog
from memstream.contracts.records import Consumed, RawEvent
from memstream.domain.derivation import Derivation
from memstream.domain.forgetting import Tombstone, lifetime_s
from memstream.domain.windows import WindowRules
from memstream.edges.faust.app import AgentHealth, DeadLetter, RecordHandler, build_faust_app
from memstream.edges.faust.dead_letters import DeadLetters
from memstream.edges.instrumentation import (
    HttpMetricsMiddleware,
    InstrumentedConsolidator,
    InstrumentedSegmenter,
    fallback_hook,
    recall_observer,
    usage_hook,
)
from memstream.edges.tracing import (
    EMBEDDER_CALLS,
    INDEX_WRITES,
    LANGUAGE_MODEL_CALLS,
    PUBLISHER_CALLS,
    TREE_WRITES,
    TracingMiddleware,
    batch_spans,
    observing_all,
    phase,
    recall_stage_spans,
    traced_batches,
    traced_port,
)
from memstream.edges.tracing import enabled as tracing_enabled
from memstream.metrics import Metrics
from memstream.ports import Embedder, LanguageModel, Publisher, TreeStore, VectorIndex
from memstream.recall.pipeline import RecallPipeline
from memstream.recall.service import MemoryService
from memstream.scheduler.clock import ClockTicker, build_scheduler
from memstream.scheduler.rebuilds import RebuildPacer, pace
from memstream.segmenter.handler import Segmenter, Topics
from memstream.settings import Settings

if TYPE_CHECKING:
    from fastapi import FastAPI

    from memstream.adapters.qdrant.edge import EdgeIndex
    from memstream.adapters.qdrant.server import QdrantIndex
    from memstream.edges.http.api import RecallParts

    Index: TypeAlias = QdrantIndex | EdgeIndex


# --- adapters ---------------------------------------------------------------------------


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
    publisher: KafkaPublisher
    priority: PriorityEmbedder | None = None
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    @property
    def online_embedder(self) -> Embedder:
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
) -> AsyncIterator[Container]:
    """Connect to the Redis, Qdrant and broker `settings` name; close them all on exit.

    With `metrics`, the LLM reports its usage and fallbacks there. `producer=False` leaves
    the publisher unstarted (a reader that never publishes). `prioritise_online`: see
    `Container`.
    """
    if not settings.redis_url or not settings.kafka_bootstrap:
        raise ValueError("connect needs kafka_bootstrap and redis_url (use the embedded stack)")
    async with AsyncExitStack() as stack:
        redis = aioredis.from_url(settings.redis_url, connection_class=HiredisPackedConnection)
        stack.push_async_callback(redis.aclose)
        embedder = build_embedder(settings)
        index = await open_index(settings, settings.qdrant_collection, embedder.dim, stack)
        publisher = KafkaPublisher.for_bootstrap(settings.kafka_bootstrap)
        if producer:
            await publisher.start()
            stack.push_async_callback(publisher.stop)
        yield Container(
            settings=settings,
            catalog=load_catalog(settings.topic_prefix),
            tree=redis_tree(redis, settings),
            index=index,
            embedder=embedder,
            llm=build_language_model(
                settings,
                on_usage=usage_hook(metrics) if metrics else None,
                on_fallback=fallback_hook(metrics) if metrics else None,
            ),
            publisher=publisher,
            priority=PriorityEmbedder(embedder) if prioritise_online else None,
        )


def redis_tree(redis: aioredis.Redis, settings: Settings) -> RedisTree:
    """The tree store on `redis`, with the settings' namespace and node-cache bounds."""
    return RedisTree(
        redis,
        settings.redis_namespace,
        node_cache_size=settings.redis_node_cache,
        node_cache_bytes=settings.redis_node_cache_mb * 1024 * 1024,
    )


def qdrant_edge_dir(settings: Settings) -> Path:
    """Where the in-process Qdrant engine (qdrant-edge) keeps its shards without `qdrant_url`."""
    return settings.data_dir.resolve() / "qdrant-edge"


async def open_index(settings: Settings, collection: str, dim: int, stack: AsyncExitStack) -> Index:
    """QdrantIndex on the configured server, else an in-process qdrant-edge shard in data_dir.

    qdrant-client's local mode filters in Python (about 1 s per query at 10k memories);
    qdrant-edge is Qdrant's own engine in-process (milliseconds), from the `embedded` extra.
    `stack` closes either.
    """
    index: Index
    # The adapter's module is imported in a thread: qdrant-client's models are half a second
    # of CPU, during which the event loop goes on with what else is starting (the runner
    # starts the consumer's group join before it connects).
    adapter = "server" if settings.qdrant_url else "edge"
    try:
        await asyncio.to_thread(importlib.import_module, f"memstream.adapters.qdrant.{adapter}")
    except ImportError as exc:
        if settings.qdrant_url:
            raise
        raise RuntimeError(
            "MEMSTREAM_QDRANT_URL is not set and Qdrant's in-process engine is not "
            "installed (pip install 'memstream[embedded]')"
        ) from exc
    if settings.qdrant_url:
        # Imported here: a worker on the in-process engine never loads qdrant-client's HTTP
        # client (most of a second of CPU at every start).
        from qdrant_client import AsyncQdrantClient

        from memstream.adapters.qdrant.server import QdrantIndex

        key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        client = AsyncQdrantClient(url=settings.qdrant_url, api_key=key)
        stack.push_async_callback(client.close)
        index = QdrantIndex(client, collection, dim)
    else:
        from memstream.adapters.qdrant.edge import EdgeIndex

        # One shard directory per collection; loading reads its segments, so off the loop.
        path = qdrant_edge_dir(settings) / collection
        index = await asyncio.to_thread(EdgeIndex.open, path, dim)
        stack.push_async_callback(index.close)
    await index.ensure_collection()
    return index


# --- handlers ---------------------------------------------------------------------------


def derivation(settings: Settings) -> Derivation:
    """What this deployment derives memories with, as every node records it."""
    online = bool(settings.llm_base_url)
    return Derivation(
        backend="openai" if online else "offline",
        model=settings.llm_model if online else "rules",
        prompt_version=settings.prompt_version or PROMPT_VERSION,
        embedder=embedder_id(settings),
    )


def embedder_id(settings: Settings) -> str:
    """Names what makes the dense vectors, with their size: a change means new vectors."""
    dim = settings.embedding_dim
    if settings.embedder == "hashing":
        return f"hashing:{dim}"
    if settings.embedder == "openai":
        return f"openai:{settings.embedding_model}:{dim}"
    return f"local:all-MiniLM-L6-v2:{settings.embed_runtime}:{dim}"


def window_rules(settings: Settings) -> WindowRules:
    return WindowRules(
        segment_messages=settings.segment_messages,
        segment_by_exchange=settings.segment_by == "exchange",
        session_idle=timedelta(seconds=settings.session_idle_timeout_s),
        clock_grace=timedelta(seconds=settings.clock_grace_s),
        default_tz=settings.default_tz,
    )


def dead_letters(c: Container) -> DeadLetters:
    return DeadLetters(c.publisher, c.catalog.dlq.name)


@dataclass(frozen=True)
class _HandlerPorts:
    """The ports a write-path handler is given: each call in a span of its own when tracing
    is on (the handler's batch span is their parent), the container's own ones when off."""

    tree: TreeStore
    index: VectorIndex
    embedder: Embedder
    llm: LanguageModel
    publisher: Publisher

    @classmethod
    def of(cls, c: Container, embedder: Embedder) -> _HandlerPorts:
        if not tracing_enabled():
            return cls(c.tree, c.index, embedder, c.llm, c.publisher)
        return cls(
            traced_port(c.tree, TREE_WRITES),
            traced_port(c.index, INDEX_WRITES),
            traced_port(embedder, EMBEDDER_CALLS),
            traced_port(c.llm, LANGUAGE_MODEL_CALLS),
            traced_port(c.publisher, PUBLISHER_CALLS),
        )


def build_segmenter(c: Container) -> Segmenter:
    ports = _HandlerPorts.of(c, c.online_embedder)
    return Segmenter(
        tree=ports.tree,
        index=ports.index,
        embedder=ports.embedder,
        llm=ports.llm,
        publisher=ports.publisher,
        topics=Topics(memories=c.catalog.memories.name, windows=c.catalog.windows.name),
        forget=c.forget_user,
        rules=window_rules(c.settings),
        history_window=c.settings.history_window,
        step_size=c.settings.consume_step_size,
        phase=phase if tracing_enabled() else None,
        clock=c.clock,
        retention=timedelta(days=c.settings.retention_days) if c.settings.retention_days else None,
        derivation=derivation(c.settings),
        rebuild_chunk_leaves=c.settings.rebuild_chunk_leaves,
    )


def build_consolidator(c: Container) -> Consolidator:
    ports = _HandlerPorts.of(c, c.background_embedder)
    return Consolidator(
        tree=ports.tree,
        index=ports.index,
        embedder=ports.embedder,
        llm=ports.llm,
        publisher=ports.publisher,
        memories_topic=c.catalog.memories.name,
        history_window=c.settings.history_window,
        derivation=derivation(c.settings),
    )


def build_clock(c: Container) -> AsyncIOScheduler:
    """The wall clock: closes windows of users who went quiet, retries degraded nodes."""
    ticker = ClockTicker(
        tree=c.tree,
        publisher=c.publisher,
        turns_topic=c.catalog.turns.name,
        windows_topic=c.catalog.windows.name,
        retry_degraded=bool(c.settings.llm_base_url),
        clock=c.clock,
    )
    paced = pace(c.settings.rebuild_leaves_per_s, c.settings.rebuild_chunk_leaves)
    pacer = RebuildPacer(
        tree=c.tree,
        publisher=c.publisher,
        turns_topic=c.catalog.turns.name,
        users_per_run=paced.users_per_run,
    )
    return build_scheduler(ticker, c.settings.clock_interval_s, pacer, paced.period_s)


def build_recall(c: Container) -> RecallParts:
    from memstream.edges.http.api import RecallParts

    return RecallParts(
        pipeline=RecallPipeline(
            tree=c.tree,
            index=c.index,
            # Recall is on an agent's critical path: ahead of consolidation's batches.
            embedder=c.online_embedder,
            llm=c.llm,
            options=c.settings.recall_options(),
        ),
        service=MemoryService(
            tree=c.tree,
            forget_user=c.forget_user,
            publisher=c.publisher,
            turns_topic=c.catalog.turns.name,
        ),
        checks={"redis": c.tree.ping, "qdrant": c.index.ping},
    )


# --- the Faust app ----------------------------------------------------------------------


@dataclass(frozen=True)
class WritePathHandlers:
    """Where the Faust app hands its records: the handlers of a connected container."""

    on_turns: RecordHandler | None
    on_windows: RecordHandler | None
    dead_letter: DeadLetter


def write_path_handlers(
    c: Container,
    metrics: Metrics,
    *,
    segmenter: Segmenter | None,
    consolidator: Consolidator | None,
) -> WritePathHandlers:
    """The agents' handlers for `segmenter` and `consolidator`, recording what they do in
    `metrics`; dead letters go through the container's publisher."""
    on_turns: RecordHandler | None = None
    on_windows: RecordHandler | None = None
    if segmenter is not None:
        on_turns = InstrumentedSegmenter(segmenter, metrics).handle_batch
        on_turns = traced_batches("segmenter", on_turns)
        if c.priority is not None:
            on_turns = _holding_background_off(c.priority, on_turns)
    if consolidator is not None:
        on_windows = InstrumentedConsolidator(consolidator, metrics).handle_records
        on_windows = traced_batches("consolidator", on_windows)
    return WritePathHandlers(on_turns, on_windows, dead_letters(c).send)


def write_path_app(
    settings: Settings,
    metrics: Metrics,
    handlers: asyncio.Future[WritePathHandlers],
    *,
    turns: bool,
    windows: bool,
    app_id: str,
    options: Mapping[str, Any],
    health: AgentHealth | None = None,
) -> faust.App:
    """A Faust app with an agent for the turns (`turns`) and one for the windows (`windows`).

    Built from settings alone, so that it can start, and join its consumer group, while the
    process still connects to its stores: `handlers` (`write_path_handlers`) may come later,
    and a record that comes first waits for them.
    """

    def when_ready(pick: Callable[[WritePathHandlers], RecordHandler | None]) -> RecordHandler:
        async def handle(batch: list[Consumed[Any]]) -> object:
            handler = pick(await handlers)
            if handler is None:
                raise RuntimeError(f"{app_id}: no handler for these records")
            return await handler(batch)

        return handle

    async def dead_letter(raw: RawEvent, reason: str, field_path: str | None = None) -> None:
        await (await handlers).dead_letter(raw, reason, field_path)

    catalog = load_catalog(settings.topic_prefix)
    datadir = settings.data_dir / "faust" / app_id
    membership: dict[str, Any] = {
        "broker_session_timeout": settings.kafka_session_timeout_s,
        "broker_heartbeat_interval": settings.kafka_heartbeat_interval_s,
        "broker_rebalance_timeout": settings.kafka_rebalance_timeout_s,
        "consumer_group_instance_id": settings.kafka_group_instance_id or None,
    }
    datadir.parent.mkdir(parents=True, exist_ok=True)  # Faust creates only the last level
    return build_faust_app(
        app_id=app_id,
        bootstrap=settings.kafka_bootstrap,
        turns=catalog.turns,
        windows=catalog.windows,
        on_turns=when_ready(lambda h: h.on_turns) if turns else None,
        on_windows=when_ready(lambda h: h.on_windows) if windows else None,
        dead_letter=dead_letter,
        metrics=metrics,
        batch_size=settings.consume_batch_size,
        fetch_max_wait_ms=settings.kafka_fetch_max_wait_ms,
        retry_budget_s=settings.record_retry_budget_s,
        max_event_skew_s=settings.max_event_skew_s,
        health=health,
        tracing=batch_spans(),
        datadir=str(datadir),
        **(membership | dict(options)),
    )


def _holding_background_off(embedders: PriorityEmbedder, handle: RecordHandler) -> RecordHandler:
    async def handle_online(batch: list[Consumed[Any]]) -> object:
        async with embedders.online():
            return await handle(batch)

    return handle_online


# --- the HTTP app -----------------------------------------------------------------------


def recall_app(
    source: Container | Settings, metrics: Metrics | None = None, *, producer: bool = True
) -> FastAPI:
    """The recall API over `source`: a container its caller closes, or settings to connect
    with at startup (closed at shutdown; `producer` as in `connect`).

    With `metrics`: requests and latency by route and status, recall stages, and `/metrics` serves
    its registry. While the app runs, `app.state.container` is the container it serves.
    """
    # Imported here: the HTTP stack (fastapi, starlette) is no part of a worker's start-up.
    from memstream.edges.http.api import create_app

    settings = source.settings if isinstance(source, Container) else source

    @asynccontextmanager
    async def open_parts() -> AsyncIterator[RecallParts]:
        async with AsyncExitStack() as stack:
            if isinstance(source, Container):
                container = source
            else:
                opened = connect(source, metrics, producer=producer)
                container = await stack.enter_async_context(opened)
            warm_up = getattr(container.embedder, "warm_up", None)
            if warm_up is not None:
                await warm_up()  # load the model now, not on the first request
            app.state.container = container
            yield build_recall(container)

    observers = [recall_observer(metrics) if metrics else None, recall_stage_spans()]
    app = create_app(
        open_parts,
        settings=settings,
        registry=metrics.registry if metrics else None,
        observe=observing_all(observers),
    )
    if metrics is not None:
        app.add_middleware(HttpMetricsMiddleware, metrics=metrics)
    if tracing_enabled():
        app.add_middleware(TracingMiddleware)
    return app
