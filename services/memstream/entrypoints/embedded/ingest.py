"""Publishing a file of events onto the turns topic, keyed by user, with a progress bar."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from memstream.adapters.kafka.producer import KafkaPublisher
from memstream.contracts.catalog import Catalog, ValidationProblem
from memstream.contracts.records import encode_value
from memstream.contracts.tenant_topics import TurnsTopic, topic_of
from memstream.entrypoints.embedded.sources import count_events, read_events


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
    turns_topic: TurnsTopic | None = None,
) -> int:
    """Validate the whole file first, then publish it in order; returns the event count.
    `turns_topic`: each user's turns topic (a turns topic per tenant); the catalog's."""
    async with file_publisher(
        path, catalog=catalog, bootstrap=bootstrap, user_id=user_id, turns_topic=turns_topic
    ) as send:
        return await send(show_progress)


@asynccontextmanager
async def file_publisher(
    path: Path,
    *,
    catalog: Catalog,
    bootstrap: str,
    user_id: str | None = None,
    turns_topic: TurnsTopic | None = None,
) -> AsyncIterator[Callable[[bool], Awaitable[int]]]:
    """The file's events, validated (or InvalidInput), and a connected producer: inside,
    `await send(show_progress)` publishes them in order and returns their count. What comes
    before the first send is done on entry (a benchmark starts its clock after it)."""
    events = check_events(catalog, read_events(path))
    topic = topic_of(turns_topic or catalog.turns.name)
    if user_id:
        events = [e | {"user_id": user_id} for e in events]
    publisher = KafkaPublisher.for_bootstrap(bootstrap)
    await publisher.start()

    async def send(show_progress: bool) -> int:
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
                    topic(str(event["user_id"])),
                    key=str(event["user_id"]).encode(),
                    value=encode_value(event),
                )
                progress.advance(task)
            await publisher.producer.flush()
        return len(events)

    try:
        yield send
    finally:
        await publisher.stop()
