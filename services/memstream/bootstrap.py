"""The composition root: settings and metrics in; adapters, handlers, the Faust app and the
HTTP app out. Nothing built here is changed afterwards.

    app = write_path_app(settings, metrics, handlers, ...)   # may start before the stores
    async with connect(settings, metrics) as container:       # the connected adapters
        handlers.set_result(write_path_handlers(container, metrics, ...))
        # or: recall_app(container, metrics)

The adapters are connected in `wiring.container`, the handlers built in `wiring.handlers`,
and the wrappers around a handler assembled in `edges.handler_chain`; this module connects
them to the apps, and names every part a process starter needs (`__all__`).

Import rule: this module imports the wiring, the contracts, and the edges it builds
(`edges.faust.app`, `edges.http.api`, `edges.handler_chain`, `edges.instrumentation`); the
edges never import it. The modules that start a process (`entrypoints.runner` and the CLI
commands) import it. Nothing here imports the embedded stack (`entrypoints.embedded`). The
HTTP server and its stack are imported only when an HTTP app is built: a worker's imports are
on the path of every restart.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

import faust

from memstream.consolidator.handler import Consolidator
from memstream.contracts.catalog import Catalog, load_catalog
from memstream.contracts.records import RawEvent
from memstream.domain.fair_share import Share
from memstream.domain.topic_pauses import trickle_records
from memstream.edges.faust.app import (
    AgentHealth,
    DeadLetter,
    Overflow,
    RecordHandler,
    build_faust_app,
)
from memstream.edges.faust.sealed_turns import SealedTurnOpener
from memstream.edges.faust.spare import SpareCapacity
from memstream.edges.faust.topic_pauses import TopicPauses
from memstream.edges.handler_chain import (
    WritePathHandlers,
    consolidator_chain,
    dead_letter_when_ready,
    open_turns_when_ready,
    overflow_struck_off_when_ready,
    segmenter_chain,
    when_ready,
)
from memstream.edges.instrumentation import HttpMetricsMiddleware, recall_observer
from memstream.edges.tracing import (
    TracingMiddleware,
    batch_spans,
    observing_all,
    recall_stage_spans,
)
from memstream.edges.tracing import enabled as tracing_enabled
from memstream.metrics import Metrics
from memstream.segmenter.fair_share import FairShare
from memstream.segmenter.handler import Segmenter
from memstream.settings import Settings
from memstream.wiring.container import (
    Container,
    connect,
    index_keys,
    open_index,
    qdrant_edge_dir,
    redis_tree,
)
from memstream.wiring.handlers import (
    build_clock,
    build_consolidator,
    build_fair_share,
    build_recall,
    build_segmenter,
    dead_letters,
    derivation,
    embedder_id,
    window_rules,
)
from memstream.wiring.repair import build_repair, divergence_watch

if TYPE_CHECKING:
    from fastapi import FastAPI

    from memstream.edges.http.api import RecallParts

__all__ = [
    "Container",
    "WritePathHandlers",
    "build_clock",
    "build_consolidator",
    "build_fair_share",
    "build_recall",
    "build_repair",
    "build_segmenter",
    "connect",
    "dead_letters",
    "derivation",
    "divergence_watch",
    "embedder_id",
    "index_keys",
    "open_index",
    "qdrant_edge_dir",
    "recall_app",
    "redis_tree",
    "window_rules",
    "write_path_app",
    "write_path_handlers",
]


# --- the Faust app ----------------------------------------------------------------------


def write_path_handlers(
    c: Container,
    metrics: Metrics,
    *,
    segmenter: Segmenter | None,
    consolidator: Consolidator | None,
) -> WritePathHandlers:
    """The agents' handlers for `segmenter` and `consolidator`, recording what they do in
    `metrics` (`edges.handler_chain`); dead letters go through the container's publisher."""
    on_turns: RecordHandler | None = None
    on_windows: RecordHandler | None = None
    on_overflow: RecordHandler | None = None
    overflow_dead_letter: DeadLetter | None = None
    share: FairShare | None = None
    if segmenter is not None:
        online = c.priority.online if c.priority is not None else None
        share = build_fair_share(c, segmenter)
        on_turns = segmenter_chain(share or segmenter, metrics, online=online)
        if share is not None:
            on_overflow = segmenter_chain(share.overflow, metrics, online=online, stage="overflow")
            overflow_dead_letter = overflow_dead_letters(dead_letters(c).send, share)
    if consolidator is not None:
        on_windows = consolidator_chain(consolidator, metrics)
    opener = SealedTurnOpener(c.tree, on_forgotten=metrics.ingested.labels("forgotten").inc)
    return WritePathHandlers(
        on_turns,
        on_windows,
        dead_letters(c).send,
        open_turns=opener,
        open_main_turns=share.opening(opener) if share is not None else None,
        on_overflow=on_overflow,
        overflow_dead_letter=overflow_dead_letter,
        overflow_struck_off=share.struck_off if share is not None else None,
    )


def overflow_dead_letters(send: DeadLetter, share: FairShare) -> DeadLetter:
    """Dead letters of the overflow topic, each then struck off its user's overflow ledger."""

    async def dead_letter(raw: RawEvent, reason: str, field_path: str | None = None) -> None:
        await send(raw, reason, field_path)
        await share.dead_lettered(raw)

    return dead_letter


# With topics paused and resumed, a partition's fetch is what a resumed topic brings at once
# (the consumer keeps one fetch of each partition ahead): a small one keeps that to a few
# dozen records a partition instead of up to a megabyte's worth.
TENANT_TOPICS_FETCH_BYTES = 2 * 1024


def paused_topics_fetching(share: Share) -> dict[str, int]:
    """Faust's fetch settings with the tenants' topics paused: small fetches, and at most a
    trickle of records handed over by one poll (`topic_pauses.trickle_records`). A broker
    that ignores the fetch size (the embedded one returns a partition's whole backlog) fills
    the consumer's buffer, and the poll in flight when a topic is paused still holds it among
    its partitions: unbounded, it handed over 2,000 records of a partition just paused, which
    the quiet tenant then waited behind for seconds (docs/figures/fairness.md, run 38)."""
    return {
        "consumer_max_fetch_size": TENANT_TOPICS_FETCH_BYTES,
        "broker_max_poll_records": trickle_records(share),
    }


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
    catalog = load_catalog(settings.broker.topic_prefix)
    datadir = settings.data_dir / "faust" / app_id
    membership: dict[str, Any] = {
        "broker_session_timeout": settings.broker.session_timeout_s,
        "broker_heartbeat_interval": settings.broker.heartbeat_interval_s,
        "broker_rebalance_timeout": settings.broker.rebalance_timeout_s,
        "consumer_group_instance_id": settings.broker.group_instance_id or None,
    } | dict(options)
    overflow = None
    routing = settings.broker.turns_routing(catalog.turns.name)
    if turns and settings.overflow_share is not None:
        overflow = overflow_consumer(settings, catalog, handlers, app_id, membership)
    pauses = None
    fetching: dict[str, int] = {}
    if turns and (share := settings.paused_share) is not None:
        fetching = paused_topics_fetching(share)
        # A topic per tenant: one over its share is not fetched, not diverted.
        pauses = TopicPauses(
            routing.topics,
            share,
            behind_s=settings.fair_share.tenant_share_lag_s,
            longest_s=settings.fair_share.overflow_longest_wait_s,
        )
    datadir.parent.mkdir(parents=True, exist_ok=True)  # Faust creates only the last level
    return build_faust_app(
        app_id=app_id,
        bootstrap=settings.broker.bootstrap,
        turns=catalog.turns,
        windows=catalog.windows,
        on_turns=when_ready(handlers, lambda h: h.on_turns, app_id) if turns else None,
        on_windows=when_ready(handlers, lambda h: h.on_windows, app_id) if windows else None,
        dead_letter=dead_letter_when_ready(handlers),
        open_turns=open_turns_when_ready(handlers, main=True) if turns else None,
        metrics=metrics,
        batch_size=settings.worker.consume_batch_size,
        fetch_max_wait_ms=settings.broker.fetch_max_wait_ms,
        retry_budget_s=settings.worker.record_retry_budget_s,
        max_event_skew_s=settings.worker.max_event_skew_s,
        health=health,
        tracing=batch_spans(),
        overflow=overflow,
        read_back_skipped=settings.broker.read_back_skipped,
        tenant_turns=routing.tenant_of_topic if turns else None,
        pauses=pauses,
        datadir=str(datadir),
        **membership,
        **fetching,
    )


def overflow_consumer(
    settings: Settings,
    catalog: Catalog,
    handlers: asyncio.Future[WritePathHandlers],
    app_id: str,
    membership: Mapping[str, Any],
) -> Overflow:
    """The segmenter's overflow consumer, with the Faust app's group timeouts."""
    shares = settings.fair_share
    return Overflow(
        topic=catalog.overflow,
        handler=when_ready(handlers, lambda h: h.on_overflow, app_id),
        dead_letter=dead_letter_when_ready(handlers, overflow=True),
        spare=SpareCapacity(longest_s=shares.overflow_longest_wait_s),
        struck_off=overflow_struck_off_when_ready(handlers),
        opening=open_turns_when_ready(handlers),
        batch_size=shares.overflow_batch_size,
        consumer_options={
            "session_timeout_ms": round(membership["broker_session_timeout"] * 1000),
            "heartbeat_interval_ms": round(membership["broker_heartbeat_interval"] * 1000),
            "rebalance_timeout_ms": round(membership["broker_rebalance_timeout"] * 1000),
        },
    )


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
            parts = build_recall(container, metrics.audit_failures.inc if metrics else None)
            # The segmenter of the process outlives these parts in a test that reopens them.
            stack.callback(container.progress_listeners.remove, parts.writes.progressed)
            if parts.repairs is not None:
                # Before the connections close: a repair cut here resumes when asked again.
                stack.push_async_callback(parts.repairs.close)
            yield parts

    observers = [recall_observer(metrics) if metrics else None, recall_stage_spans()]
    app = create_app(
        open_parts,
        settings=settings,
        registry=metrics.registry if metrics else None,
        observe=observing_all(observers),
        metrics=metrics,
    )
    if metrics is not None:
        app.add_middleware(HttpMetricsMiddleware, metrics=metrics)
    if tracing_enabled():
        app.add_middleware(TracingMiddleware)
    return app
