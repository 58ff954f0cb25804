"""`memstream ingest` and `memstream demo`: feeding the pipeline and showing it work.

What a command runs loads inside it, so `--help` answers at once.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from memstream.entrypoints.cli_audit import ActorOption, actor_of
from memstream.settings import Settings


def ingest(
    file: Annotated[
        Path,
        typer.Argument(exists=True, dir_okay=False, help="JSONL of events or a LoCoMo .json file."),
    ],
    user: Annotated[
        str | None, typer.Option(help="Publish every event under this user id.")
    ] = None,
    actor: ActorOption = None,
) -> None:
    """Publish a file of events onto the turns topic, in order, keyed by user. The forgets
    and rebuilds it carries are recorded on the audit topic."""
    from memstream.contracts.catalog import load_catalog
    from memstream.entrypoints.cli_audit import audit_commands, command_action
    from memstream.entrypoints.embedded.ingest import InvalidInput, publish_file
    from memstream.entrypoints.embedded.sources import read_events

    settings = Settings()
    console = Console(stderr=True, highlight=False)
    if not settings.broker.bootstrap:
        console.print(
            "MEMSTREAM_KAFKA_BOOTSTRAP is not set: start `memstream up` and export the "
            "endpoints it prints, or point it at your broker.",
            style="red",
        )
        raise typer.Exit(2)
    catalog = load_catalog(settings.broker.topic_prefix)
    who = actor_of(actor)
    try:
        count = asyncio.run(
            publish_file(
                file,
                catalog=catalog,
                bootstrap=settings.broker.bootstrap,
                user_id=user,
                turns_topic=settings.broker.turns_routing(catalog.turns.name).topic_for,
            )
        )
    except InvalidInput as bad:
        console.print(str(bad), style="red", markup=False)
        raise typer.Exit(1) from bad
    console.print(f"published {count} events to {catalog.turns.name}")
    commands = [
        (action, user or str(event["user_id"]))
        for event in read_events(file)
        if (action := command_action(event)) is not None
    ]
    asyncio.run(audit_commands(settings, who, commands))


def demo(
    timeout: Annotated[float, typer.Option(help="Give up after this many seconds.")] = 280.0,
) -> None:
    """Run the pipeline on the embedded stack over a bundled conversation and show the trees."""
    from memstream.entrypoints.embedded.demo.run import run_demo

    settings = Settings()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    console = Console(highlight=False)
    try:
        asyncio.run(run_demo(settings, console, timeout_s=timeout))
    except TimeoutError as exc:
        console.print(f"demo failed: {exc}", style="red")
        raise typer.Exit(1) from exc
