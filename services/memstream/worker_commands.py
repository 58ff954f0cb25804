"""`memstream worker --role ...`: one role of the pipeline against configured servers.

This is what containers run. Every role serves `/metrics`, `/healthz` and `/readyz` on
`MEMSTREAM_METRICS_PORT`:

- `segmenter`: the turns agent (consumer group `<group>-segmenter`).
- `consolidator`: the windows agent (consumer group `<group>-consolidator`).
- `scheduler`: the wall clock, plus the backlog collector (consumer lag of both groups, open
  windows per level). Deploy exactly one: its ticks are idempotent, so two are wasteful,
  not wrong, and none only delays clock closures until it is back.
- `all`: everything in one process and one consumer group `<group>` (as `memstream up`).

Separate roles use separate consumer groups so that one role's restarts never pause the
other's partitions, and each scales on its own topic's lag.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, cast

import faust
import typer
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from memstream.bootstrap import Runtime, open_runtime
from memstream.codec import decode_window
from memstream.metrics import Metrics
from memstream.observability import (
    BacklogCollector,
    InstrumentedConsolidator,
    InstrumentedSegmenter,
    instrument_runtime,
    process_registry,
    serve_metrics,
)
from memstream.scheduler.clock import build_scheduler
from memstream.segmenter.handler import Segmenter
from memstream.settings import Settings
from memstream.workers import build_faust_app

log = logging.getLogger(__name__)


class Role(StrEnum):
    SEGMENTER = "segmenter"
    CONSOLIDATOR = "consolidator"
    SCHEDULER = "scheduler"
    ALL = "all"


def consumer_group(settings: Settings, role: Role) -> str:
    """The Kafka consumer group of a role's Faust app."""
    return settings.consumer_group if role == Role.ALL else f"{settings.consumer_group}-{role}"


def lag_groups(settings: Settings, role: Role, turns: str, windows: str) -> dict[str, list[str]]:
    """The consumer groups (and their topics) whose lag this role's collector reports."""
    if role == Role.ALL:
        return {settings.consumer_group: [turns, windows]}
    return {
        consumer_group(settings, Role.SEGMENTER): [turns],
        consumer_group(settings, Role.CONSOLIDATOR): [windows],
    }


@dataclass
class RunningWorker:
    """The parts one worker process runs; `live()` and `ready()` back the probes."""

    runtime: Runtime
    app: faust.App | None = None
    clock: AsyncIOScheduler | None = None
    collector: asyncio.Task[None] | None = None
    started: bool = False
    port: int = 0

    def live(self) -> bool:
        """False once a part has died: the orchestrator should restart the process."""
        if self.app is not None and (self.app.crashed or self.app.should_stop):
            return False
        if self.clock is not None and self.started and not self.clock.running:
            return False
        return not (self.collector is not None and self.collector.done())

    async def ready(self) -> bool:
        """Started, alive, and Redis answers (the store every role writes or reads)."""
        return self.started and self.live() and await self.runtime.tree.ping()


@asynccontextmanager
async def running_worker(
    settings: Settings,
    role: Role,
    metrics: Metrics,
    *,
    host: str = "0.0.0.0",
    port: int | None = None,
    collect_interval_s: float = 15.0,
    faust_options: Mapping[str, Any] | None = None,
) -> AsyncIterator[RunningWorker]:
    """Start `role` with its HTTP endpoints; stop everything on exit.

    The HTTP server starts first, so liveness answers while the role is still starting.
    """
    parts: set[Role] = (
        {Role.SEGMENTER, Role.CONSOLIDATOR, Role.SCHEDULER} if role == Role.ALL else {role}
    )
    async with AsyncExitStack() as stack:
        runtime = await open_runtime(settings)
        stack.push_async_callback(runtime.close)
        instrument_runtime(runtime, metrics)
        worker = RunningWorker(runtime)
        worker.port = await stack.enter_async_context(
            serve_metrics(
                metrics.registry,
                settings.metrics_port if port is None else port,
                host=host,
                live=worker.live,
                ready=worker.ready,
            )
        )
        if parts & {Role.SEGMENTER, Role.CONSOLIDATOR}:
            worker.app = _faust_app(runtime, role, parts, metrics, faust_options or {})
            await worker.app.start()
            stack.push_async_callback(worker.app.stop)
        if Role.SCHEDULER in parts:
            clock = build_scheduler(runtime.ticker(), settings.clock_interval_s)
            clock.start()
            stack.callback(clock.shutdown, wait=False)
            worker.clock = clock
            catalog = runtime.catalog
            collector = BacklogCollector(
                metrics,
                redis=runtime.redis,
                bootstrap=settings.kafka_bootstrap,
                groups=lag_groups(settings, role, catalog.turns.name, catalog.windows.name),
            )
            worker.collector = asyncio.create_task(
                collector.run(collect_interval_s), name="metrics-collector"
            )
            stack.push_async_callback(_cancel, worker.collector)
        worker.started = True
        log.info("worker %s ready; metrics on port %d", role, worker.port)
        yield worker


def _faust_app(
    runtime: Runtime, role: Role, parts: set[Role], metrics: Metrics, options: Mapping[str, Any]
) -> faust.App:
    s = runtime.settings
    datadir = s.data_dir / "faust" / str(role)
    datadir.parent.mkdir(parents=True, exist_ok=True)  # Faust creates only the last level
    seg = InstrumentedSegmenter(runtime.segmenter(), metrics) if Role.SEGMENTER in parts else None
    app = build_faust_app(
        app_id=consumer_group(s, role),
        bootstrap=s.kafka_bootstrap,
        turns_topic=runtime.catalog.turns.name,
        windows_topic=runtime.catalog.windows.name,
        # Same call signature; the cast goes once build_faust_app takes a handler protocol.
        segmenter=cast(Segmenter | None, seg),
        consolidator=None,
        batch_size=s.embed_batch_size,
        datadir=str(datadir),
        **options,
    )
    if Role.CONSOLIDATOR in parts:
        consolidator = InstrumentedConsolidator(runtime.consolidator(), metrics)
        _add_consolidator_agent(app, runtime.catalog.windows.name, consolidator, s.embed_batch_size)
    return app


def _add_consolidator_agent(
    app: faust.App, topic: str, consolidator: InstrumentedConsolidator, batch_size: int
) -> None:
    """The windows agent of `workers.build_faust_app`, but passing each record's timestamp
    (the closure's publish time) so the consolidation lag is measured per closure."""
    windows = app.topic(topic, key_type=bytes, value_type=bytes)

    @app.agent(windows, name=f"{app.conf.id}-consolidator")
    async def consolidate(stream: faust.StreamT[bytes]) -> None:
        batches = stream.take_events(batch_size, within=0.25)  # type: ignore[attr-defined]
        async for events in batches:
            closures = [decode_window(json.loads(e.value)) for e in events]
            await consolidator.handle_batch(closures, [e.message.timestamp for e in events])


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def serve_role(
    settings: Settings, role: Role, *, host: str, collect_interval_s: float
) -> int:
    """Run `role` until SIGTERM/SIGINT (exit code 0) or until a part dies (exit code 1)."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopping.set)
    metrics = Metrics(process_registry())
    async with running_worker(
        settings, role, metrics, host=host, collect_interval_s=collect_interval_s
    ) as worker:
        while not stopping.is_set():
            if not worker.live():
                log.error("worker %s: a part stopped; exiting", role)
                return 1
            with suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), timeout=1.0)
    return 0


async def run_all_roles(settings: Settings) -> None:
    """Every role in this process until cancelled: a service for `memstream up`."""
    metrics = Metrics(process_registry())
    async with running_worker(settings, Role.ALL, metrics) as worker:
        while True:
            await asyncio.sleep(1.0)
            if not worker.live():
                raise RuntimeError("a worker part stopped")


def worker(
    role: Annotated[Role, typer.Option(help="Which part of the pipeline to run.")] = Role.ALL,
    host: Annotated[str, typer.Option(help="Address for /metrics, /healthz, /readyz.")] = "0.0.0.0",
    collect_interval: Annotated[
        float, typer.Option(help="Seconds between consumer-lag and open-window collections.")
    ] = 15.0,
) -> None:
    """Run one role against the configured broker and stores (what containers run)."""
    settings = Settings()
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not settings.kafka_bootstrap or not settings.redis_url:
        typer.echo(
            "memstream worker needs MEMSTREAM_KAFKA_BOOTSTRAP and MEMSTREAM_REDIS_URL "
            "(`memstream up` runs everything on an embedded stack instead).",
            err=True,
        )
        raise typer.Exit(2)
    code = asyncio.run(serve_role(settings, role, host=host, collect_interval_s=collect_interval))
    raise typer.Exit(code)
