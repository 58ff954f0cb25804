"""Running memstream's workers in this process: the Faust agents and the clock scheduler."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import faust
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from memstream.adapters.embedding.priority import PriorityEmbedder
from memstream.adapters.kafka.lag import consumer_lag
from memstream.bootstrap import Runtime
from memstream.consolidator.handler import Consolidator
from memstream.contracts.records import Consumed
from memstream.entrypoints.faust.app import RecordHandler, build_faust_app
from memstream.entrypoints.instrumentation import InstrumentedConsolidator, InstrumentedSegmenter
from memstream.metrics import Metrics
from memstream.scheduler.clock import build_scheduler
from memstream.segmenter.handler import Segmenter
from memstream.settings import Settings

log = logging.getLogger(__name__)


# A single process owns its consumer group: rebalancing quickly costs nothing there.
FAST_REBALANCE = {
    "broker_session_timeout": 6.0,
    "broker_heartbeat_interval": 1.0,
    "broker_rebalance_timeout": 6.0,
}


@dataclass
class RunningPipeline:
    app: faust.App | None
    clock: AsyncIOScheduler | None
    segmenter: Segmenter | None
    consolidator: Consolidator | None


@asynccontextmanager
async def run_pipeline(
    runtime: Runtime,
    *,
    segmenter: bool = True,
    consolidator: bool = True,
    scheduler: bool = True,
    fast_rebalance: bool = False,
    metrics: Metrics | None = None,
    app_id: str | None = None,
    faust_options: Mapping[str, Any] | None = None,
) -> AsyncIterator[RunningPipeline]:
    """Start the chosen parts on `runtime`; stop them on exit.

    With `metrics`, the handlers are wrapped to record what they do (the edges own metrics).
    """
    s = runtime.settings
    seg = runtime.segmenter() if segmenter else None
    con = runtime.consolidator() if consolidator else None
    on_turns: RecordHandler | None = None
    on_windows: RecordHandler | None = None
    if seg is not None:
        handle = InstrumentedSegmenter(seg, metrics).handle_batch if metrics else seg.handle_batch
        on_turns = _holding_background_off(runtime.embedders, handle)
    if con is not None:
        on_windows = (
            InstrumentedConsolidator(con, metrics).handle_records if metrics else con.handle_records
        )
    app = None
    if on_turns or on_windows:
        datadir = s.data_dir / "faust" / (app_id or s.consumer_group)
        datadir.parent.mkdir(parents=True, exist_ok=True)  # Faust creates only the last level
        app = build_faust_app(
            app_id=app_id or s.consumer_group,
            bootstrap=s.kafka_bootstrap,
            turns=runtime.catalog.turns,
            windows=runtime.catalog.windows,
            on_turns=on_turns,
            on_windows=on_windows,
            dead_letter=runtime.dead_letters().send,
            metrics=metrics,
            batch_size=s.consume_batch_size,
            fetch_max_wait_ms=s.kafka_fetch_max_wait_ms,
            datadir=str(datadir),
            **(FAST_REBALANCE if fast_rebalance else {}),
            **(faust_options or {}),
        )
    clock = build_scheduler(runtime.ticker(), s.clock_interval_s) if scheduler else None
    async with AsyncExitStack() as running:
        if app is not None:
            await app.start()
            running.push_async_callback(app.stop)
        if clock is not None:
            clock.start()
            running.callback(clock.shutdown, wait=False)
        yield RunningPipeline(app, clock, seg, con)


def _holding_background_off(embedders: PriorityEmbedder, handle: RecordHandler) -> RecordHandler:
    async def handle_online(batch: list[Consumed[Any]]) -> object:
        async with embedders.online():
            return await handle(batch)

    return handle_online


async def wait_caught_up(
    runtime: Runtime, users: list[str], *, timeout_s: float, poll_s: float = 0.5
) -> None:
    """Return once both consumers have no lag and no user has a window left open.

    Checked twice in a row, since a closure can be in flight between the two topics.
    """
    topics = [runtime.catalog.turns.name, runtime.catalog.windows.name]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    quiet_polls = 0
    while quiet_polls < 2:
        if loop.time() > deadline:
            raise TimeoutError(f"consolidation did not catch up within {timeout_s:.0f} s")
        await asyncio.sleep(poll_s)
        lag = await consumer_lag(
            runtime.settings.kafka_bootstrap, runtime.settings.consumer_group, topics
        )
        open_windows = 0
        for user in users:
            state = await runtime.tree.load_state(user)
            open_windows += len(state["open_windows"]) if state else 1
        quiet_polls = quiet_polls + 1 if sum(lag.values()) == 0 and open_windows == 0 else 0


async def serve_everything(
    settings: Settings, on_serving: Callable[[], None] | None = None
) -> None:
    """Workers, clock, backlog metrics and recall API on one runtime (`memstream up`);
    `on_serving` runs once the recall API accepts connections.

    One runtime because Qdrant's local mode admits one client per data directory.
    """
    from memstream.bootstrap import open_runtime
    from memstream.entrypoints.http.api import create_app
    from memstream.entrypoints.http.server import serve_until_cancelled
    from memstream.entrypoints.instrumentation import (
        BacklogCollector,
        RecallMetricsMiddleware,
        instrument_runtime,
        process_registry,
        recall_observer,
    )

    metrics = Metrics(process_registry())
    runtime = await open_runtime(settings)
    try:
        instrument_runtime(runtime, metrics)
        catalog = runtime.catalog
        collector = BacklogCollector(
            metrics,
            tree=runtime.tree,
            bootstrap=settings.kafka_bootstrap,
            groups={settings.consumer_group: [catalog.turns.name, catalog.windows.name]},
        )
        async with run_pipeline(runtime, fast_rebalance=True, metrics=metrics):
            collecting = asyncio.create_task(collector.run(15.0), name="metrics-collector")
            app = create_app(runtime, registry=metrics.registry, observe=recall_observer(metrics))
            app.add_middleware(RecallMetricsMiddleware, metrics=metrics)
            try:
                await serve_until_cancelled(
                    app, settings.api_host, settings.api_port, settings.log_level, on_serving
                )
            finally:
                collecting.cancel()
                await asyncio.gather(collecting, return_exceptions=True)
    finally:
        await runtime.close()
