"""A forget reaches every copy memstream writes (issue #38, point 2; docs/forget-everywhere.md).

Two users talk through the real broker, Faust workers, Redis (the embedded one, which keeps
an append-only file) and Qdrant's in-process engine, with the recall API beside them. One of
them uses words no one else does (the canaries), in good turns and in two bad records that
are dead-lettered (one names the user, one does not). Before the forget, the words are
found: opened on the feed, in Redis and its append-only file. Then the user is forgotten
through the API while its second session is still being processed, and every copy is read:
every record of the memories, dead-letter and windows topics from the beginning (dead
letters' base64 decoded), every Redis key of the deployment, every payload of the index and
every file of its directory (segments and write-ahead log), Redis's append-only files once
the rewrite the forget started is done, and every log record at INFO and above. None holds
a canary. The other user's memories are still there and still open.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from memstream.bootstrap import Container, qdrant_edge_dir
from memstream.client import AsyncRecallClient, MemoryFeed, MemoryWritten, UserForgotten
from memstream.client.feed_events import FeedEvent
from memstream.contracts.catalog import TopicSpec
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.runner import WRITE_PATH, Part, run_parts
from memstream.settings import Settings

from .test_forget_message import api_runtime

pytestmark = pytest.mark.integration

GONE, KEPT = "canary-ann", "kept-bob"
CANARIES = ("zyxquorbil", "plumvexary", "gnarlbisket", "wobblethrane")
START = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)


def session(user: str, sid: str, day: int, lines: list[str]) -> list[dict[str, Any]]:
    at = START + timedelta(days=day)
    turns = [
        {
            "type": "turn.v1",
            "event_id": f"{user}-{sid}-{seq}",
            "user_id": user,
            "session_id": sid,
            "seq": seq,
            "speaker": "Ann" if seq % 2 == 0 else "Bot",
            "role": "user" if seq % 2 == 0 else "assistant",
            "text": text,
            "ts": (at + timedelta(minutes=seq)).isoformat(),
        }
        for seq, text in enumerate(lines)
    ]
    end = {
        "type": "session_end.v1",
        "user_id": user,
        "session_id": sid,
        "ts": (at + timedelta(hours=1)).isoformat(),
    }
    return [*turns, end]


FIRST = [
    "My parrot Zyxquorbil learned to whistle today.",
    "What a clever bird.",
    "We feed him plumvexary seeds from the market.",
    "That sounds healthy.",
]
SECOND = [
    "Tomorrow I bake gnarlbisket for my sister.",
    "Enjoy the baking.",
    "She lives on Wobblethrane street now.",
    "Nice street name.",
]
OTHER = ["I started rowing on the river.", "Rowing is good exercise."]
# Records no worker can take: one names the user (its letter is sealed), one names none (its
# letter keeps no original bytes).
BAD_OF_USER = {"type": "turn.v1", "user_id": GONE, "session_id": "s9", "text": "zyxquorbil"}
BAD_OF_NOBODY = b'{"type": "turn.v1", "text": "plumvexary gnarlbisket"'


async def produce(bootstrap: str, topic: str, records: list[tuple[str | None, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for key, value in records:
            await producer.send_and_wait(topic, value, key=key.encode() if key else None)
    finally:
        await producer.stop()


def as_records(events: list[dict[str, Any]]) -> list[tuple[str | None, bytes]]:
    return [(e["user_id"], json.dumps(e).encode()) for e in events]


def canaries_in(blob: bytes | str) -> set[str]:
    text = (blob.decode("utf-8", "replace") if isinstance(blob, bytes) else blob).lower()
    return {w for w in CANARIES if w in text}


async def topic_values(bootstrap: str, spec: TopicSpec) -> list[bytes]:
    """Every record of `topic` from its beginning, the bytes of base64 fields decoded too."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        topic = spec.name
        parts = [TopicPartition(topic, p) for p in range(spec.partitions)]
        consumer.assign(parts)
        await consumer.seek_to_beginning(*parts)
        ends = await consumer.end_offsets(parts)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        values: list[bytes] = []
        while [tp for tp in parts if await consumer.position(tp) < ends[tp]]:
            assert loop.time() < deadline, f"could not read {topic} to its end"
            for records in (await consumer.getmany(timeout_ms=500)).values():
                values += [r.value for r in records if r.value is not None]
    finally:
        await consumer.stop()
    decoded: list[bytes] = []
    for value in values:
        doc = json.loads(value)
        if doc.get("original_b64"):
            decoded.append(base64.b64decode(doc["original_b64"]))
    return values + decoded


async def redis_values(c: Container) -> list[bytes]:
    """Every key of the deployment's namespace, with everything it holds."""
    r = c.tree._r  # type: ignore[attr-defined]  # this test's own namespace
    found: list[bytes] = []
    async for key in r.scan_iter(match=f"{c.settings.redis.namespace}:*", count=1000):
        kind = (await r.type(key)).decode()
        found.append(key)
        if kind == "string":
            found.append(await r.get(key))
        elif kind == "hash":
            found += [b for kv in (await r.hgetall(key)).items() for b in kv]
        elif kind == "list":
            found += await r.lrange(key, 0, -1)
        elif kind == "set":
            found += list(await r.smembers(key))
        elif kind == "zset":
            found += [m for m, _ in await r.zrange(key, 0, -1, withscores=True)]
        else:
            raise AssertionError(f"{key!r} is a {kind}: read it too")
    return found


async def append_only_files(c: Container) -> list[bytes]:
    """Redis's append-only files, once no rewrite is running or waiting."""
    r = c.tree._r  # type: ignore[attr-defined]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while True:
        info = await r.info("persistence")
        if not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
            break
        assert loop.time() < deadline, "the append-only file was not rewritten"
        await asyncio.sleep(0.1)
    directory = Path((await r.config_get("dir"))["dir"])
    sub = (await r.config_get("appenddirname")).get("appenddirname", "")
    files = [p for p in (directory / sub).iterdir() if p.is_file()]
    assert files, "Redis keeps no append-only file here"
    return [p.read_bytes() for p in files]


def index_files(settings: Settings) -> dict[str, bytes]:
    root = qdrant_edge_dir(settings)
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}


async def feed_of(feed: MemoryFeed, until: Any) -> list[FeedEvent]:
    seen: list[FeedEvent] = []
    async for event in feed:
        seen.append(event)
        if until(seen):
            return seen
    return seen


async def read_feed(
    settings: Settings, c: Container, api: str, group: str, until: Any
) -> list[FeedEvent]:
    async with (
        AsyncRecallClient(api) as opener,
        MemoryFeed(
            settings.broker.bootstrap,
            group_id=f"{settings.broker.consumer_group}-{group}",
            catalog=c.catalog,
            opener=opener,
        ) as feed,
    ):
        return await asyncio.wait_for(feed_of(feed, until), 60)


def written(events: list[FeedEvent], user: str) -> list[MemoryWritten]:
    return [e for e in events if isinstance(e, MemoryWritten) and e.user_id == user]


async def test_a_forgotten_user_leaves_no_readable_word_anywhere(
    settings: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    # The index's files are unreadable at once only with its payloads sealed (off by default:
    # a deployment that seals them gives up repairing a lost Redis from the index).
    settings = settings.model_copy(update={"seal_index": True})
    async with api_runtime(settings, tmp_path) as c:
        local = c.settings
        api = f"http://127.0.0.1:{local.api.port}"
        async with (
            run_parts(c, WRITE_PATH | {Part.API}, fast_rebalance=True),
            httpx.AsyncClient(base_url=api, timeout=30) as http,
        ):
            await forget_mid_stream_and_look_everywhere(c, api, http)
    logged = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert [r.getMessage() for r in logged if canaries_in(r.getMessage())] == []


async def forget_mid_stream_and_look_everywhere(
    c: Container, api: str, http: httpx.AsyncClient
) -> None:
    local = c.settings
    turns = c.catalog.turns.name
    first = as_records(session(GONE, "s1", 0, FIRST) + session(KEPT, "s1", 0, OTHER))
    bad = [(GONE, json.dumps(BAD_OF_USER).encode()), (None, BAD_OF_NOBODY)]
    await produce(local.broker.bootstrap, turns, first + bad)
    await wait_caught_up(c, [GONE, KEPT], timeout_s=120)

    # The words were written, and the checks below find them where they are readable.
    before = await read_feed(local, c, api, "before", lambda s: len(written(s, GONE)) >= 2)
    assert canaries_in(" ".join(m.text for m in written(before, GONE)))
    assert canaries_in(b" ".join(await redis_values(c)))
    assert any(canaries_in(f) for f in await append_only_files(c))
    assert not any(
        canaries_in(v) for v in await topic_values(local.broker.bootstrap, c.catalog.memories)
    )

    # The second session is on its way through the workers when the forget comes.
    await produce(local.broker.bootstrap, turns, as_records(session(GONE, "s2", 1, SECOND)))
    response = await http.delete(f"/v1/users/{GONE}")
    assert response.status_code == 200, response.text
    after = await read_feed(
        local,
        c,
        api,
        "after",
        lambda s: (
            any(isinstance(e, UserForgotten) and e.user_id == GONE for e in s)
            and len(written(s, KEPT)) >= 1
        ),
    )
    await wait_caught_up(c, [KEPT], timeout_s=120)  # GONE has no state to close any more

    assert written(after, GONE) == []  # sealed under a key that is gone: skipped
    assert written(after, KEPT)[0].text  # the other user's still open
    for topic in (c.catalog.memories, c.catalog.dlq, c.catalog.windows):
        values = await topic_values(local.broker.bootstrap, topic)
        assert [canaries_in(v) for v in values if canaries_in(v)] == [], topic.name
    assert canaries_in(b" ".join(await redis_values(c))) == set()
    assert [p for p, blob in index_files(local).items() if canaries_in(blob)] == []
    nodes, _ = await c.index.user_nodes(KEPT, None, 100)
    assert nodes and all(n.text for n in nodes)  # the kept user's payloads still open
    assert [f for f in await append_only_files(c) if canaries_in(f)] == []
