"""`memstream topics create|validate`: put the catalog on a broker, check events against it.

The broker client, the catalog and the settings load inside the commands (a fast `--help`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, BinaryIO

import typer

if TYPE_CHECKING:
    from rich.table import Table

    from memstream.adapters.kafka.admin import TopicStatus
    from memstream.contracts.catalog import Catalog

topics_app = typer.Typer(no_args_is_help=True, add_completion=False)


@topics_app.command("create")
def create(
    bootstrap: Annotated[
        str | None, typer.Option(help="Broker address (default: MEMSTREAM_KAFKA_BOOTSTRAP).")
    ] = None,
    prefix: Annotated[
        str | None, typer.Option(help="Topic name prefix (default: MEMSTREAM_TOPIC_PREFIX).")
    ] = None,
) -> None:
    """Create the catalog's topics that do not exist yet; existing ones are left alone."""
    from rich.console import Console

    from memstream.adapters.kafka.admin import ensure_topics
    from memstream.contracts.catalog import load_catalog
    from memstream.settings import Settings

    settings = Settings()
    address = bootstrap or settings.broker.bootstrap
    if not address:
        typer.echo(
            "No broker configured: set MEMSTREAM_KAFKA_BOOTSTRAP or pass --bootstrap "
            "(`memstream up` creates the topics on its embedded broker).",
            err=True,
        )
        raise typer.Exit(2)
    catalog = load_catalog(settings.broker.topic_prefix if prefix is None else prefix)
    # With a turns topic per tenant, each configured tenant's too (`contracts.tenant_topics`).
    tenants = settings.broker.turns_routing(catalog.turns.name).specs(catalog.turns)
    statuses = asyncio.run(ensure_topics(address, (*catalog.topics, *tenants)))
    Console(highlight=False).print(_status_table(address, statuses))


def _status_table(address: str, statuses: list[TopicStatus]) -> Table:
    from rich.table import Table

    table = Table(title=f"topics on {address}", title_justify="left")
    for column in ("topic", "state", "partitions", "replicas", "note"):
        table.add_column(column)
    for s in statuses:
        style = "green" if s.state == "created" else ""
        cells = (s.name, s.state, str(s.partitions), str(s.replication_factor), s.note)
        table.add_row(*cells, style=style)
    return table


@topics_app.command("validate")
def validate(
    file: Annotated[Path, typer.Argument(help="JSON Lines of event values; - reads stdin.")],
    topic: Annotated[
        str | None,
        typer.Option(help="Check against this topic; default: the topic of each event's type."),
    ] = None,
) -> None:
    """Check events against the catalog: one line per bad event, exit code 1 if any."""
    from memstream.contracts.catalog import UnknownTopicError, load_catalog

    catalog = load_catalog()
    if topic is not None:
        try:
            catalog.topic(topic)
        except UnknownTopicError:
            names = ", ".join(spec.name for spec in catalog)
            typer.echo(f"Unknown topic {topic!r}; the catalog has {names}.", err=True)
            raise typer.Exit(2) from None
    if str(file) == "-":
        bad, total = _check_lines(catalog, topic, sys.stdin.buffer)
    else:
        # Bytes, not text: a line that is not UTF-8 is a bad event to report, not a crash.
        with file.open("rb") as lines:
            bad, total = _check_lines(catalog, topic, lines)
    typer.echo(f"{total - bad} of {total} events valid.", err=True)
    if bad:
        raise typer.Exit(1)


@topics_app.command("schemas")
def schemas(
    out: Annotated[Path, typer.Option(help="Directory to write the schema files into.")],
) -> None:
    """Write each event type's JSON Schema (draft 2020-12) to OUT/<type>.schema.json, for
    producers in other languages to validate against before they send."""
    from memstream.contracts.catalog import load_catalog

    out.mkdir(parents=True, exist_ok=True)
    for spec in load_catalog():
        if spec.values_of:
            continue  # another topic's values: written once, under that topic
        for value_type, schema in spec.values.items():
            where = f"{value_type} values on topic {spec.base_name}, record key: {spec.key}"
            document = {**schema, "$comment": where}
            path = out / f"{value_type}.schema.json"
            path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
            typer.echo(str(path))


def _check_lines(catalog: Catalog, topic: str | None, lines: BinaryIO) -> tuple[int, int]:
    bad = total = 0
    for number, line in _numbered_events(lines):
        total += 1
        problems = catalog.validate(topic, line)
        if problems:
            bad += 1
            # Plain echo, not rich: reasons quote user data that may contain [markup].
            typer.echo(f"line {number}: " + "; ".join(str(p) for p in problems))
    return bad, total


def _numbered_events(lines: BinaryIO) -> Iterator[tuple[int, bytes]]:
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield number, line
