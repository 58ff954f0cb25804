"""`memstream up`: the whole pipeline on one machine, with no external services."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from aiokafka.errors import KafkaError
from rich.console import Console
from rich.table import Table

from memstream.entrypoints.collector import collect_less_often, freeze_start_up
from memstream.entrypoints.embedded.stack import EmbeddedStack
from memstream.settings import Settings


async def run_up(
    settings: Settings,
    on_endpoints: Callable[[EmbeddedStack], None],
    on_started: Callable[[], None],
) -> int:
    """The stack, then every part on it through the runner, until SIGINT/SIGTERM.

    The signals are caught from the start: a stop while the stack starts still stops it.
    """
    from memstream.entrypoints.runner import EVERYTHING, run_until_stopped, stop_on_signals

    with stop_on_signals() as stopping:
        async with EmbeddedStack(settings) as stack:
            on_endpoints(stack)
            if settings.api.up_api_process and settings.api.port != 0:
                from memstream.entrypoints.embedded.api_process import run_with_api_apart

                return await run_with_api_apart(stack.settings(), stopping, on_started)
            return await run_until_stopped(
                stack.settings(), EVERYTHING, stopping, fast_rebalance=True, on_started=on_started
            )


def print_endpoints(stack: EmbeddedStack, console: Console | None = None) -> None:
    """A table for people, then `KEY=value` lines other processes and scripts can use."""
    console = console or Console(highlight=False)
    ends = stack.endpoints
    table = Table(title="memstream is up", title_justify="left")
    table.add_column("part")
    table.add_column("endpoint", overflow="fold")
    table.add_column("runs")
    source = {True: "embedded", False: "external"}
    table.add_row("kafka", ends.kafka_bootstrap, source["kafka" in ends.embedded] + " (Tansu)")
    table.add_row("redis", ends.redis_url, source["redis" in ends.embedded])
    qdrant_mode = "qdrant-edge, in-process" if ends.qdrant_path else "external"
    table.add_row("qdrant", ends.qdrant_location, qdrant_mode)
    for status in stack.topics:
        count = f"{status.partitions} partition{'' if status.partitions == 1 else 's'}"
        table.add_row("topic", status.name, f"{status.state}, {count}")
    console.print(table)
    console.print(f"MEMSTREAM_KAFKA_BOOTSTRAP={ends.kafka_bootstrap}", soft_wrap=True)
    console.print(f"MEMSTREAM_REDIS_URL={ends.redis_url}", soft_wrap=True)
    api = stack.settings()
    console.print(f"MEMSTREAM_RECALL_URL=http://{api.api.host}:{api.api.port}", soft_wrap=True)
    # The memory explorer is served by the same API (docs/explorer.md); not a KEY=value line,
    # since no setting reads it.
    console.print(f"Memory explorer: http://{api.api.host}:{api.api.port}/ui/", soft_wrap=True)
    if api.api.auth_disabled and not api.api.keys:
        # So `memstream recall` run with these lines opens the stores the same way.
        console.print("MEMSTREAM_RECALL_AUTH_DISABLED=true", soft_wrap=True)
    # Block-buffered when piped: flush so a supervisor or test sees the endpoints now.
    console.file.flush()


def up(
    data_dir: Annotated[
        Path | None,
        typer.Option(help="Where Redis and Qdrant keep their files (MEMSTREAM_DATA_DIR)."),
    ] = None,
) -> None:
    """Run memstream here: a broker, Redis and Qdrant for each part not configured."""
    settings = Settings()
    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": data_dir})
    logging.basicConfig(
        level=settings.observability.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    console = Console(highlight=False)

    def ready() -> None:
        # After the endpoints, once the recall API accepts connections.
        freeze_start_up()
        console.print("Ready. Press Ctrl+C to stop.")
        console.file.flush()

    collect_less_often()  # a long-running process, as `memstream worker` and `serve` are
    try:
        code = asyncio.run(run_up(settings, lambda stack: print_endpoints(stack, console), ready))
    except (RuntimeError, OSError, KafkaError) as exc:
        # A server that did not start, a busy data dir, an unreachable broker: say it plainly.
        console = Console(stderr=True, highlight=False)
        console.print("memstream up failed:", style="red", end=" ")
        console.print(str(exc), markup=False)
        raise typer.Exit(1) from exc
    raise typer.Exit(code)
