"""Helpers for the recall integration tests: per-module settings, trees, a served API.

- `module_settings`: settings with a unique topic prefix (topics created), consumer group,
  Qdrant collection and data dir, for fixtures that outlive one test.
- `build_locomo_tree`: the real write path (broker, Faust workers, Redis, Qdrant) over a
  LoCoMo conversation, waited on until every window is consolidated.
- `write_nodes`: nodes straight into Redis and Qdrant (fast; for property tests), and
  `user_tree`: a small sound tree to write that way.
- `served`: the recall API on real HTTP over a container it connects itself.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer

from memstream.adapters.embedding.embedders import HashingEmbedder
from memstream.adapters.kafka.admin import ensure_topics
from memstream.bootstrap import Container, recall_app
from memstream.contracts.catalog import load_catalog
from memstream.domain.ids import segment_id, window_node_id
from memstream.domain.models import IndexedMemory, Level, MemoryNode
from memstream.domain.sparse import document_vector
from memstream.edges.http.server import BackgroundServer
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.settings import Settings
from memstream_lab.locomo import locomo_data_dir


def module_settings(stack_settings: Settings, data_dir: Path, **updates: Any) -> Settings:
    uid = uuid.uuid4().hex[:12]
    settings = stack_settings.model_copy(
        update={
            "topic_prefix": f"test-{uid}.",
            "consumer_group": f"memstream-test-{uid}",
            "qdrant_collection": f"memstream_test_{uid}",
            "redis_namespace": f"test-{uid}",
            "data_dir": data_dir,
            **updates,
        }
    )
    asyncio.run(
        ensure_topics(settings.broker.bootstrap, load_catalog(settings.broker.topic_prefix).topics)
    )
    return settings


def locomo_file(conversation: str) -> Path:
    return locomo_data_dir() / f"{conversation}.json"


async def build_locomo_tree(settings: Settings, conversation: str, user: str) -> None:
    """Ingest a LoCoMo conversation through the real pipeline; returns once consolidated."""
    fast = settings.model_copy(update={"clock_grace_s": 0.0, "clock_interval_s": 0.5})
    async with run_parts(fast, WRITE_PATH, fast_rebalance=True) as running:
        await publish_file(
            locomo_file(conversation),
            catalog=running.container.catalog,
            bootstrap=fast.broker.bootstrap,
            show_progress=False,
        )
        await wait_caught_up(running.container, [user], timeout_s=180)


async def write_nodes(container: Container, nodes: Sequence[MemoryNode]) -> None:
    """Nodes into Redis (structure) and Qdrant (hashing vectors, real lexical vectors)."""
    embedder = HashingEmbedder(container.embedder.dim)
    vectors = await embedder.embed([n.text for n in nodes])
    await container.index.upsert(
        [IndexedMemory(n, v, document_vector(n.text)) for n, v in zip(nodes, vectors, strict=True)]
    )
    for node in nodes:
        await container.tree.save_node(node, fingerprint="")


START = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)


def user_tree(user: str, texts: list[list[str]]) -> list[MemoryNode]:
    """One session per inner list (one day each), all in one week and month."""
    month = _node(user, Level.MONTH, START, START + timedelta(days=20), None, "profile " + user)
    week = _node(user, Level.WEEK, START, START + timedelta(days=7), month.id, "week " + user)
    nodes = [month, week]
    for d, session in enumerate(texts):
        at = START + timedelta(days=d)
        day = _node(user, Level.DAY, at, at + timedelta(hours=6), week.id, "day " + user)
        sess = _node(user, Level.SESSION, at, at + timedelta(hours=2), day.id, " ".join(session))
        nodes += [day, sess]
        for i, text in enumerate(session):
            t = at + timedelta(minutes=i)
            nodes.append(_node(user, Level.SEGMENT, t, t, sess.id, text, f"{user}-{d}-{i}"))
    return nodes


def _node(
    user: str,
    level: Level,
    start: datetime,
    end: datetime,
    parent: str | None,
    text: str,
    key: str = "",
) -> MemoryNode:
    if level == Level.SEGMENT:
        ident = segment_id(user, [key])
    else:
        session = start.isoformat() if level == Level.SESSION else None
        ident = window_node_id(user, level, start, session)
    return MemoryNode(
        id=ident,
        user_id=user,
        level=level,
        t_start=start,
        t_end=end,
        text=text,
        parent_id=parent,
        source_ids=(key or f"{user}-{int(level)}",),
    )


@contextmanager
def served(settings: Settings) -> Iterator[BackgroundServer]:
    """The recall API over real HTTP, its container connected (and closed) by the app."""
    with BackgroundServer(recall_app(settings)) as server:
        yield server


def container_of(server: BackgroundServer) -> Container:
    container: Container = server.app.state.container
    return container


async def forget_events(
    settings: Settings, user: str, timeout_s: float = 20.0
) -> list[dict[str, Any]]:
    """The `forget.v1` events for `user` on the turns topic, read from the beginning."""
    topic = load_catalog(settings.broker.topic_prefix).turns.name
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=settings.broker.bootstrap, auto_offset_reset="earliest"
    )
    await consumer.start()
    found: list[dict[str, Any]] = []
    try:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout_s
        while not found and loop.time() < end:
            batches = await consumer.getmany(timeout_ms=500)
            for records in batches.values():
                for record in records:
                    value = json.loads(record.value)
                    if value.get("type") == "forget.v1" and record.key == user.encode():
                        found.append(value)
    finally:
        await consumer.stop()
    return found
