"""`memstream worker --role ...` and `memstream serve`: the processes containers run.

Both run against configured servers (`MEMSTREAM_KAFKA_BOOTSTRAP`, `MEMSTREAM_REDIS_URL`,
and `MEMSTREAM_QDRANT_URL` or Qdrant's in-process engine) through the one runner
(`entrypoints.runner`); `memstream up` runs everything on an embedded stack instead. Roles:

- `segmenter`: the turns agent (consumer group `<group>-segmenter`).
- `consolidator`: the windows agent (consumer group `<group>-consolidator`).
- `scheduler`: the wall clock, plus the backlog collector (consumer lag of both groups, open
  windows per level). Deploy exactly one: its ticks are idempotent, so two are wasteful,
  not wrong, and none only delays clock closures until it is back.
- `all`: the three in one process and one consumer group `<group>`.

Every role serves `/metrics`, `/healthz` and `/readyz` on `MEMSTREAM_METRICS_PORT`; the
recall API serves them on its own port. The heavy modules load inside the commands, so
`--help` answers at once.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable, Collection
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memstream.entrypoints.collector import collect_less_often, freeze_start_up

if TYPE_CHECKING:
    from memstream.entrypoints.runner import Part
    from memstream.settings import Settings

log = logging.getLogger(__name__)


class Role(StrEnum):
    SEGMENTER = "segmenter"
    CONSOLIDATOR = "consolidator"
    SCHEDULER = "scheduler"
    ALL = "all"


def role_parts(role: Role) -> frozenset[Part]:
    from memstream.entrypoints.runner import WRITE_PATH, Part

    return WRITE_PATH if role == Role.ALL else frozenset({Part(role.value)})


def worker(
    role: Annotated[Role, typer.Option(help="Which part of the pipeline to run.")] = Role.ALL,
    host: Annotated[str, typer.Option(help="Address for /metrics, /healthz, /readyz.")] = "0.0.0.0",
    collect_interval: Annotated[
        float, typer.Option(help="Seconds between consumer-lag and open-window collections.")
    ] = 15.0,
) -> None:
    """Run one role against the configured broker and stores (what containers run)."""
    from memstream.settings import Settings

    settings = _configured(Settings(), "worker")
    from memstream import faults

    faults.arm(settings.handoff.fault_point)  # off unless a test set MEMSTREAM_FAULT_POINT
    parts = role_parts(role)
    raise typer.Exit(_run(settings, parts, probes_host=host, collect_interval_s=collect_interval))


def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (MEMSTREAM_API_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (MEMSTREAM_API_PORT).")] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(help="Files of the in-process Qdrant engine (MEMSTREAM_DATA_DIR)."),
    ] = None,
) -> None:
    """Run the recall API against the configured stores."""
    from memstream.settings import Settings

    updates: dict[str, object] = {}
    if host is not None:
        updates["api_host"] = host
    if port is not None:
        updates["api_port"] = port
    if data_dir is not None:
        updates["data_dir"] = data_dir
    settings = _configured(Settings().model_copy(update=updates), "serve")
    try:
        settings.api.required_keys()  # before connecting to anything: auth fails closed
    except ValueError as refused:
        typer.echo(f"memstream serve: {refused}", err=True)
        raise typer.Exit(2) from refused
    if settings.embedding.threads == 0:
        # One model thread per API process: with two, the idle one competed with the event
        # loop for the cores, and query embedding's tail latency under load grew many-fold.
        settings = settings.model_copy(update={"embed_threads": 1})
    if settings.embedding.processes == 0:
        # Queries go to the model one batch at a time: a second copy would sit idle.
        settings = settings.model_copy(update={"embed_processes": 1})
    if settings.api.workers > 1:
        from memstream.entrypoints.api_workers import run_workers

        try:
            raise typer.Exit(run_workers(settings))
        except ValueError as refused:
            typer.echo(f"memstream serve: {refused}", err=True)
            raise typer.Exit(2) from refused
    from memstream.edges.http.server import event_loop_factory
    from memstream.entrypoints.runner import Part

    raise typer.Exit(_run(settings, {Part.API}, loop_factory=event_loop_factory()))


def _configured(settings: Settings, command: str) -> Settings:
    logging.basicConfig(
        level=settings.observability.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not settings.broker.bootstrap or not settings.redis.url:
        typer.echo(
            f"memstream {command} needs MEMSTREAM_KAFKA_BOOTSTRAP and MEMSTREAM_REDIS_URL "
            "(`memstream up` runs everything on an embedded stack instead).",
            err=True,
        )
        raise typer.Exit(2)
    return settings


def _run(
    settings: Settings,
    parts: Collection[Part],
    *,
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None,
    **options: Any,
) -> int:
    """Run `parts` in this process until a stop signal; the process is collected as a
    long-running one (`entrypoints/collector.py`)."""
    from memstream.entrypoints.runner import run_until_stopped, stop_on_signals
    from memstream.entrypoints.shutdown import bounded_by

    async def main() -> int:
        with stop_on_signals() as stopping:
            async with bounded_by(stopping, settings.worker.shutdown_grace_s):
                return await run_until_stopped(
                    settings, parts, stopping, on_started=freeze_start_up, **options
                )

    collect_less_often()

    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(main())
    except RuntimeError:  # a store that cannot be opened, a data dir in use
        log.exception("could not run %s", ", ".join(sorted(parts)))
        return 1
