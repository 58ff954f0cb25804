"""Hostile input beside live traffic: bad records absorbed per minute, and what the valid
turns' freshness pays for them.

    python -m memstream_lab.bench.hostile --out bench-results/hostile.json

A standalone broker and Redis (the embedded stack's) in this process, `memstream worker
--role all` in its own. Valid turns are published at `--rate` per second over five users,
each a message between people (role `other`), so each is an L1 at once; this process polls
Redis for each by its id (as `l1_freshness`). First `--seconds` of valid turns alone, then
as long again with hostile records interleaved at `--hostile-rate` per second: a fixed
cycle of records every one of which must end as exactly one dead letter (not JSON, not an
object, a missing field, a lone surrogate in the user id, JSON nested 100,000 deep, text
over the limit, a record of 900 KB, a timestamp without offset, year 9999, a date far
ahead of the clock, an unknown type). The dead-letter topic is read back and counted.
Reported: dead letters per minute (from the first hostile record to the last dead letter),
hostile records sent and dead-lettered, and the valid turns' publish-to-L1 p50/p95/max and
stored rate in each phase.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import signal
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from redis import asyncio as aioredis

from memstream.adapters.kafka.producer import KafkaPublisher
from memstream.adapters.redis.tree import RedisTree
from memstream.contracts.catalog import load_catalog
from memstream.contracts.records import encode_value
from memstream.domain.ids import segment_id
from memstream.settings import Settings
from memstream_lab.bench.synthetic import sentence
from memstream_lab.bench.worker_process import (
    WorkerProcess,
    consuming_after,
    standalone_stack,
    worker_environment,
)
from memstream_lab.measure import nearest_rank, write_report

POLL_S = 0.01
USERS = 5


def _turn(user: str, n: int, **changes: Any) -> dict[str, Any]:
    event = {
        "type": "turn.v1",
        "event_id": f"{user}-{n}",
        "user_id": user,
        "session_id": "live",
        "seq": n,
        "speaker": "Ana",
        "role": "other",
        "text": sentence(random.Random(n)),
        "ts": datetime.now(UTC).isoformat(),
        "tz": "UTC",
    }
    return event | changes


def _json(value: dict[str, Any]) -> bytes:
    return json.dumps(value).encode()  # ensure_ascii: a lone surrogate travels as "\ud800"


# Each makes one record that must end as exactly one dead letter.
HOSTILE: dict[str, Callable[[int], bytes]] = {
    "not json": lambda n: random.Random(n).randbytes(64),
    "not an object": lambda n: b"[1, 2, 3]",
    "missing field": lambda n: _json({k: v for k, v in _turn("h", n).items() if k != "text"}),
    "lone surrogate in user_id": lambda n: _json(_turn("h\ud800", n)),
    "nested 100,000 deep": lambda n: b"[" * 100_000 + b"]" * 100_000,
    "text over the limit": lambda n: _json(_turn("h", n, text="x" * 16_001)),
    "900 KB record": lambda n: _json(_turn("h", n, text="y" * 900_000)),
    "timestamp without offset": lambda n: _json(_turn("h", n, ts="2026-01-01T10:00:00")),
    "year 9999": lambda n: _json(_turn("h", n, ts="9999-12-31T23:00:00+00:00")),
    "far ahead of the clock": lambda n: _json(
        _turn("h", n, ts=(datetime.now(UTC) + timedelta(days=400)).isoformat())
    ),
    "unknown type": lambda n: _json(_turn("h", n, type="turn.v9")),
}


async def count_dead_letters(bootstrap: str, topic: str, counted: list[float]) -> None:
    """Append the arrival time of every dead letter on `topic` until cancelled."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100
    )
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        if not partitions:
            await consumer.topics()
            found = consumer.partitions_for_topic(topic) or ()
            partitions = [TopicPartition(topic, p) for p in found]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        while True:
            batches = await consumer.getmany(timeout_ms=200)
            now = time.monotonic()
            counted.extend(now for records in batches.values() for _ in records)
    finally:
        await consumer.stop()


async def phase(
    settings: Settings, seconds: float, rate: float, hostile_rate: float, tag: str
) -> dict[str, Any]:
    """Valid turns at `rate` (and hostile records at `hostile_rate`) for `seconds`."""
    catalog = load_catalog(settings.broker.topic_prefix)
    publisher = KafkaPublisher.for_bootstrap(settings.broker.bootstrap)
    await publisher.start()
    producer = publisher.producer
    redis = aioredis.from_url(settings.redis.url)
    tree = RedisTree(redis, settings.redis.namespace)
    users = [f"{tag}-{uuid.uuid4().hex[:6]}-{i}" for i in range(USERS)]
    published: dict[tuple[str, str], float] = {}
    stored: dict[tuple[str, str], float] = {}
    kinds = list(HOSTILE)
    hostile_sent: dict[str, int] = {}
    done = asyncio.Event()

    async def valid() -> None:
        start = time.monotonic()
        for n in range(int(seconds * rate)):
            await asyncio.sleep(max(0.0, start + n / rate - time.monotonic()))
            user = users[n % USERS]
            event = _turn(user, n, seq=n // USERS)  # each user's turns numbered 0, 1, 2...
            published[(user, segment_id(user, [event["event_id"]]))] = time.monotonic()
            await producer.send_and_wait(
                catalog.turns.name, key=user.encode(), value=encode_value(event)
            )
        done.set()

    async def hostile() -> None:
        if hostile_rate <= 0:
            return
        start = time.monotonic()
        for n in range(int(seconds * hostile_rate)):
            await asyncio.sleep(max(0.0, start + n / hostile_rate - time.monotonic()))
            kind = kinds[n % len(kinds)]
            await producer.send_and_wait(
                catalog.turns.name, key=f"hostile-{n}".encode(), value=HOSTILE[kind](n)
            )
            hostile_sent[kind] = hostile_sent.get(kind, 0) + 1

    async def watch() -> None:
        deadline = time.monotonic() + seconds + 120
        while not done.is_set() or len(stored) < len(published):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(published) - len(stored)} L1s never appeared")
            pending: dict[str, list[str]] = {}
            for user, node in published.keys() - stored.keys():
                pending.setdefault(user, []).append(node)
            for user, nodes in pending.items():
                for found in await tree.get_many(user, nodes):
                    stored[(user, found.id)] = time.monotonic()
            await asyncio.sleep(POLL_S)

    started = time.monotonic()
    try:
        await asyncio.gather(valid(), hostile(), watch())
    finally:
        await publisher.stop()
        await redis.aclose()
    waits = [(stored[key] - published[key]) * 1000 for key in published]
    span = max(stored.values()) - started
    return {
        "valid_turns": len(waits),
        "valid_stored_per_min": round(60 * len(waits) / span, 1),
        "valid_publish_to_l1_p50_ms": round(nearest_rank(waits, 50), 1),
        "valid_publish_to_l1_p95_ms": round(nearest_rank(waits, 95), 1),
        "valid_publish_to_l1_max_ms": round(max(waits), 1),
        "hostile_sent": sum(hostile_sent.values()),
        "hostile_sent_by_kind": hostile_sent,
        "started": started,
    }


async def measure(settings: Settings, scratch: Path, args: argparse.Namespace) -> dict[str, Any]:
    extra = {
        "MEMSTREAM_EMBEDDER": args.embedder,
        "MEMSTREAM_MODEL_CACHE_DIR": str(args.model_cache_dir),
    }
    catalog = load_catalog(settings.broker.topic_prefix)
    partitions = [TopicPartition(catalog.turns.name, p) for p in range(catalog.turns.partitions)]
    worker = WorkerProcess(worker_environment(settings, extra), scratch / "worker.log")
    letters: list[float] = []
    counting = asyncio.create_task(
        count_dead_letters(settings.broker.bootstrap, catalog.dlq.name, letters)
    )
    try:
        # A first turn handled: the worker consumes (its model is loaded before it is ready).
        await _publish_one(settings)
        await consuming_after(
            worker, settings.broker.bootstrap, settings.broker.consumer_group, partitions
        )
        print("valid turns alone", flush=True)
        alone = await phase(settings, args.seconds, args.rate, 0.0, "alone")
        print("  " + json.dumps(alone), flush=True)
        print("valid turns with hostile records interleaved", flush=True)
        mixed = await phase(settings, args.seconds, args.rate, args.hostile_rate, "mixed")
        deadline = time.monotonic() + 120
        while len(letters) < mixed["hostile_sent"] and time.monotonic() < deadline:
            if worker.proc.poll() is not None:
                raise RuntimeError(f"the worker exited\n{worker.tail()}")
            await asyncio.sleep(0.1)
        span = (max(letters) if letters else time.monotonic()) - mixed["started"]
        mixed |= {
            "dead_letters": len(letters),
            "hostile_absorbed_per_min": round(60 * len(letters) / span, 1),
            "worker_alive": worker.proc.poll() is None,
        }
        print("  " + json.dumps(mixed), flush=True)
        for figures in (alone, mixed):
            del figures["started"]
        return {"valid_alone": alone, "with_hostile": mixed}
    finally:
        counting.cancel()
        await asyncio.gather(counting, return_exceptions=True)
        worker.signal(signal.SIGTERM)
        await worker.exited(timeout_s=30)


async def _publish_one(settings: Settings) -> None:
    catalog = load_catalog(settings.broker.topic_prefix)
    publisher = KafkaPublisher.for_bootstrap(settings.broker.bootstrap)
    await publisher.start()
    try:
        event = _turn("warm-up", 0)
        await publisher.producer.send_and_wait(
            catalog.turns.name, key=b"warm-up", value=encode_value(event)
        )
    finally:
        await publisher.stop()


def run(args: argparse.Namespace) -> dict[str, Any]:
    with standalone_stack("hostile") as (settings, scratch):
        report = asyncio.run(measure(settings, scratch, args))
    report["setup"] = {
        "worker": "memstream worker --role all, offline LLM",
        "embedder": args.embedder,
        "broker": "Tansu (embedded stack), standalone",
        "valid": f"{args.rate} turns/s over {USERS} users, each an L1 at once",
        "hostile": f"{args.hostile_rate} records/s, cycling through: {', '.join(HOSTILE)}",
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "note": "shared machines: compare the two phases of the same run only",
    }
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Where to write the JSON.")
    parser.add_argument("--seconds", type=float, default=20.0, help="Length of each phase.")
    parser.add_argument("--rate", type=float, default=10.0, help="Valid turns per second.")
    parser.add_argument("--hostile-rate", type=float, default=10.0, help="Hostile records/s.")
    parser.add_argument("--embedder", default="local", choices=["local", "hashing"])
    parser.add_argument(
        "--model-cache-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "memstream-models",
        help="Exported ONNX graphs (kept between runs).",
    )
    args = parser.parse_args(argv)
    report = run(args)
    write_report(args.out, report)
    alone, mixed = report["valid_alone"], report["with_hostile"]
    print(
        f"hostile: {mixed['dead_letters']} of {mixed['hostile_sent']} dead-lettered, "
        f"{mixed['hostile_absorbed_per_min']}/min; valid p50/p95 "
        f"{alone['valid_publish_to_l1_p50_ms']}/{alone['valid_publish_to_l1_p95_ms']} ms alone, "
        f"{mixed['valid_publish_to_l1_p50_ms']}/{mixed['valid_publish_to_l1_p95_ms']} ms beside "
        f"them; stored {alone['valid_stored_per_min']} and {mixed['valid_stored_per_min']}/min"
    )


if __name__ == "__main__":
    main()
