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
import logging
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

import faust
import typer
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from memstream.bootstrap import Runtime, open_runtime
from memstream.entrypoints.instrumentation import (
    BacklogCollector,
    instrument_runtime,
    process_registry,
    serve_metrics,
)
from memstream.entrypoints.runner import run_pipeline
from memstream.metrics import Metrics
from memstream.settings import Settings

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
    runtime: Runtime | None = None,
) -> AsyncIterator[RunningWorker]:
    """Start `role` with its HTTP endpoints; stop everything on exit.

    The HTTP server starts first, so liveness answers while the role is still starting.
    With `runtime`, the role uses it and its caller closes it: Qdrant's local mode admits
    one client per data directory, so `memstream up` runs every part on one runtime.
    """
    parts: set[Role] = (
        {Role.SEGMENTER, Role.CONSOLIDATOR, Role.SCHEDULER} if role == Role.ALL else {role}
    )
    async with AsyncExitStack() as stack:
        if runtime is None:
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
        pipeline = await stack.enter_async_context(
            run_pipeline(
                runtime,
                segmenter=Role.SEGMENTER in parts,
                consolidator=Role.CONSOLIDATOR in parts,
                scheduler=Role.SCHEDULER in parts,
                metrics=metrics,
                app_id=consumer_group(settings, role),
                faust_options=faust_options,
            )
        )
        worker.app, worker.clock = pipeline.app, pipeline.clock
        if Role.SCHEDULER in parts:
            catalog = runtime.catalog
            collector = BacklogCollector(
                metrics,
                tree=runtime.tree,
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
