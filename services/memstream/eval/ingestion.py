"""Putting the conversations through the real write path, once per run directory.

Every conversation becomes one user's turn events, published on the turns topic of the
embedded stack; the Faust workers write L1 online and consolidate L2-L5 as windows close.
When all users are caught up, the L1 count of each is written to `ingested.json`. A resumed
run skips a conversation whose marker entry matches what Redis and Qdrant still hold; any
other conversation is published again, which is safe: node ids are deterministic, so a
replay overwrites instead of duplicating.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from memstream.bootstrap import Runtime
from memstream.domain.models import Level
from memstream.eval.dataset import EvalConversation
from memstream.eval.locomo import conversation_events
from memstream.ingest import dumps_event, publish_file
from memstream.pipeline import run_pipeline, wait_caught_up

MARKER_FILE = "ingested.json"
EVENTS_FILE = "events.jsonl"
# Generous: the whole dev split is consolidated in about a minute on 2 cores.
CATCH_UP_TIMEOUT_S = 1800.0


async def pending(
    runtime: Runtime, split: Sequence[EvalConversation], out_dir: Path
) -> list[EvalConversation]:
    """The conversations the stores do not hold completely."""
    marker = _read_marker(out_dir / MARKER_FILE)
    todo: list[EvalConversation] = []
    for conv in split:
        expected = marker.get(conv.user_id)
        in_redis = await runtime.tree.count(conv.user_id, Level.SEGMENT)
        in_qdrant = await runtime.index.count(conv.user_id, Level.SEGMENT)
        if expected is None or not (expected == in_redis == in_qdrant):
            todo.append(conv)
    return todo


async def ingest(
    runtime: Runtime, convs: Sequence[EvalConversation], out_dir: Path, console: Console
) -> float:
    """Publish the conversations, wait until every window is consolidated; returns seconds."""
    if not convs:
        return 0.0
    events_path = out_dir / EVENTS_FILE
    with events_path.open("w", encoding="utf-8") as sink:
        for conv in convs:
            for event in conversation_events(conv.conversation, conv.user_id):
                sink.write(dumps_event(event) + "\n")
    users = [c.user_id for c in convs]
    started = time.perf_counter()
    async with run_pipeline(runtime, fast_rebalance=True):
        await publish_file(
            events_path, catalog=runtime.catalog, bootstrap=runtime.settings.kafka_bootstrap
        )
        with console.status("consolidating sessions, days, weeks and months"):
            await wait_caught_up(runtime, users, timeout_s=CATCH_UP_TIMEOUT_S)
    elapsed = time.perf_counter() - started
    marker = _read_marker(out_dir / MARKER_FILE)
    for user in users:
        marker[user] = await runtime.tree.count(user, Level.SEGMENT)
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
