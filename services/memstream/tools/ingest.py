"""Publishing a file of events onto the turns topic, keyed by user, with a progress bar."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from memstream.adapters.kafka.producer import KafkaPublisher
from memstream.contracts.catalog import Catalog, ValidationProblem
from memstream.contracts.records import encode_value
from memstream.tools.sources import count_events, read_events


class InvalidInput(ValueError):
    """The file holds events that the catalog rejects; nothing was published."""

    def __init__(self, problems: list[tuple[int, ValidationProblem]]) -> None:
        self.problems = problems
        lines = [f"event {n}: {p}" for n, p in problems[:20]]
        super().__init__("invalid events:\n" + "\n".join(lines))


def check_events(catalog: Catalog, events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """All events of a file, or InvalidInput naming each bad one (1-based position)."""
    good: list[dict[str, Any]] = []
    problems: list[tuple[int, ValidationProblem]] = []
    for n, event in enumerate(events, start=1):
        found = catalog.turns.validate(event)
        problems += [(n, p) for p in found]
        good.append(event)
    if problems:
        raise InvalidInput(problems)
    return good


async def publish_file(
    path: Path,
    *,
    catalog: Catalog,
    bootstrap: str,
    user_id: str | None = None,
    show_progress: bool = True,
) -> int:
    """Validate the whole file first, then publish it in order; returns the event count."""
    events = check_events(catalog, read_events(path))
    if user_id:
        events = [e | {"user_id": user_id} for e in events]
    publisher = KafkaPublisher.for_bootstrap(bootstrap)
    await publisher.start()
    try:
        columns = (
            TextColumn("[bold]ingest"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
        )
        with Progress(*columns, disable=not show_progress, transient=False) as progress:
            task = progress.add_task(path.name, total=len(events) or count_events(path))
            for event in events:
                # Plain sends, one flush at the end: the producer batches and keeps per-key order.
                await publisher.producer.send(
                    catalog.turns.name,
                    key=str(event["user_id"]).encode(),
                    value=encode_value(event),
                )
                progress.advance(task)
            await publisher.producer.flush()
    finally:
        await publisher.stop()
    return len(events)


def dumps_event(event: dict[str, Any]) -> str:
    return json.dumps(event, ensure_ascii=False)
