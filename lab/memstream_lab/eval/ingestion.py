"""Putting the conversations through the real write path, once per run directory.

Every conversation becomes one user's turn events (LoCoMo's here; any set's wire events
through `ingest_events`), published on the turns topic of the embedded stack; the Faust
workers write L1 online and consolidate L2-L5 as windows close. When all users are caught
up, the L1 count of each is written to `ingested.json`. A resumed run skips a conversation
whose marker entry matches what Redis and Qdrant still hold; any other conversation is
published again, which is safe: node ids are deterministic, so a replay overwrites instead
of duplicating.

Two ingests of the same data build the same tree. The workers' clock (the segmenter's and
the scheduler's) stands at the replay's first instant until every event is published, then
follows the wall clock: while the replay streams in, windows close only by what the events
say (a session's end, a turn past a day, week or month), in the order they were published;
the wall clock then closes the last windows of each user, whose ticks land after every
event. A wall clock running from the start would close a day, week or month the moment its
known sessions were done, and its later sessions would reopen it as late data, so which
profile a month was refined from would depend on the timing of the run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from memstream.bootstrap import Container, index_keys, open_index
from memstream.contracts.codec import parse_ts
from memstream.domain.models import Level
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream_lab.eval.dataset import EvalConversation
from memstream_lab.eval.memo import SearchCache
from memstream_lab.locomo import conversation_events

MARKER_FILE = "ingested.json"
EVENTS_FILE = "events.jsonl"
# Generous: the whole dev split is consolidated in about a minute on 2 cores.
CATCH_UP_TIMEOUT_S = 1800.0


@dataclass
class Deployment:
    """One write-path configuration: a view of the container, its own users and collection.

    `segment_messages` None is the container's own write path (by exchange, as deployed).
    A number pins segments to that many messages counted whoever speaks: a separate
    deployment, as it would be in production, with its own Qdrant collection (so its IDF
    statistics are its own) and user ids with a suffix in Redis.
    """

    segment_messages: int | None
    container: Container
    suffix: str = ""
    searches: SearchCache = field(default_factory=dict)

    @property
    def label(self) -> str:
        return "exchange" if self.segment_messages is None else f"seg{self.segment_messages}"

    def user(self, conv: EvalConversation) -> str:
        return conv.user_id + self.suffix


async def open_deployment(
    container: Container, segment_messages: int | None, stack: AsyncExitStack
) -> Deployment:
    """The deployment for `segment_messages`; `stack` closes what it opens."""
    base = container.settings
    if segment_messages is None:
        return Deployment(None, container)
    overrides = {"segment_messages": segment_messages, "segment_by": "count"}
    collection = f"{base.qdrant.collection}_seg{segment_messages}"
    settings = base.model_copy(update={**overrides, "qdrant_collection": collection})
    # Same store, another collection: a second deployment of the write path beside the first.
    keys = index_keys(container.tree, settings)
    index = await open_index(settings, collection, container.embedder.dim, stack, keys=keys)
    view = replace(container, settings=settings, index=index)
    return Deployment(segment_messages, view, f"-seg{segment_messages}")


class ReplayClock:
    """Reads `start` until released, then the wall clock."""

    def __init__(self, start: datetime) -> None:
        self._start = start
        self._released = False

    def release(self) -> None:
        self._released = True

    def __call__(self) -> datetime:
        return datetime.now(UTC) if self._released else self._start


async def pending(
    deployment: Deployment, split: Sequence[EvalConversation], out_dir: Path
) -> list[EvalConversation]:
    """The conversations the deployment's stores do not hold completely."""
    missing = set(await missing_users(deployment, [deployment.user(c) for c in split], out_dir))
    return [conv for conv in split if deployment.user(conv) in missing]


async def missing_users(deployment: Deployment, users: Sequence[str], out_dir: Path) -> list[str]:
    """The users whose L1 count in Redis and Qdrant is not what the marker says was ingested,
    or whose entity index is empty (a run directory ingested with the knowledge write off)."""
    marker = _read_marker(out_dir / MARKER_FILE)
    container = deployment.container
    todo: list[str] = []
    for user in users:
        expected = marker.get(user)
        in_redis = await container.tree.count(user, Level.SEGMENT)
        in_qdrant = await container.index.count(user, Level.SEGMENT)
        complete = expected is not None and expected == in_redis == in_qdrant
        if not complete or not (await container.tree.entity_index(user)).leaves:
            todo.append(user)
    return todo


async def ingest(
    deployment: Deployment, convs: Sequence[EvalConversation], out_dir: Path, console: Console
) -> float:
    """Publish the conversations, wait until every window is consolidated; returns seconds."""
    users = [deployment.user(c) for c in convs]
    events = (
        event
        for conv, user in zip(convs, users, strict=True)
        for event in conversation_events(conv.conversation, user)
    )
    return await ingest_events(deployment, events, users, out_dir, console)


async def ingest_events(
    deployment: Deployment,
    events: Iterable[dict[str, Any]],
    users: Sequence[str],
    out_dir: Path,
    console: Console,
) -> float:
    """Publish wire events of `users` in order, wait until every window is consolidated and
    mark the users ingested; returns seconds."""
    if not users:
        return 0.0
    events_path = out_dir / EVENTS_FILE
    first: datetime | None = None
    with events_path.open("w", encoding="utf-8") as sink:
        for event in events:
            at = parse_ts(event["ts"])
            first = at if first is None else min(first, at)
            sink.write(json.dumps(event, ensure_ascii=False) + "\n")
    clock = ReplayClock(first or datetime.now(UTC))
    container = replace(deployment.container, clock=clock)
    started = time.perf_counter()
    async with run_parts(container, WRITE_PATH, fast_rebalance=True):
        await publish_file(
            events_path, catalog=container.catalog, bootstrap=container.settings.broker.bootstrap
        )
        clock.release()
        status = f"{deployment.label}: consolidating sessions to months"
        with console.status(status):
            await wait_caught_up(container, list(users), timeout_s=CATCH_UP_TIMEOUT_S)
    elapsed = time.perf_counter() - started
    marker = _read_marker(out_dir / MARKER_FILE)
    for user in users:
        marker[user] = await container.tree.count(user, Level.SEGMENT)
    (out_dir / MARKER_FILE).write_text(json.dumps(marker, indent=2, sort_keys=True) + "\n")
    return elapsed


def _read_marker(path: Path) -> dict[str, int]:
    if not path.exists():
        return {}
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError:
        return {}
    return {str(k): int(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
