"""L1 freshness: how long a live turn takes from publish to a stored, searchable L1 memory,
on a freshly started worker, first turn included; and how long the worker takes to be ready.

    python -m memstream_lab.bench.l1_freshness --out bench-results/l1-freshness.json

The embedded stack's broker and Redis run in this process; the worker is `memstream worker
--role segmenter`, started fresh for each run, in its own process (as deployed). Once its
`/readyz` answers 200 (the time to ready), turns are published at a steady `--rate` (20/s)
for `--users` users, each one a message between people (role `other`), so each is an L1 of
its own at once. An L1's vectors reach Qdrant before its node reaches Redis, so a node found
in Redis is searchable: this process polls Redis for every pending L1 (by its deterministic
id) every few milliseconds. Reported: publish-to-recallable p50/p95/p99/max, the first
turn's latency alone, and the worker's time to ready. `--server-code DIR` runs the worker
from another source tree (e.g. an export of main); `--rounds` alternates.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
from redis import asyncio as aioredis

from memstream.adapters.kafka.producer import KafkaPublisher
from memstream.adapters.redis.tree import RedisTree
from memstream.contracts.catalog import load_catalog
from memstream.contracts.records import encode_value
from memstream.domain.ids import segment_id
from memstream.entrypoints.embedded.background import BackgroundStack
from memstream.settings import Settings
from memstream_lab.bench.api_config import parse_config
from memstream_lab.bench.synthetic import sentence
from memstream_lab.measure import free_port, nearest_rank, write_report

READY_TIMEOUT_S = 300.0
POLL_S = 0.005
TARGET = "p99 < 1 s, first turn included"


def start_worker(settings: Settings, scratch: Path, config: dict[str, Any]) -> tuple[Any, int]:
    port = free_port()
    env = {
        **os.environ,
        "MEMSTREAM_KAFKA_BOOTSTRAP": settings.broker.bootstrap,
        "MEMSTREAM_REDIS_URL": settings.redis.url,
        "MEMSTREAM_QDRANT_URL": "",
        "MEMSTREAM_DATA_DIR": str(scratch / "worker"),
        "MEMSTREAM_MODEL_CACHE_DIR": str(scratch.parent / "models"),
        "MEMSTREAM_METRICS_PORT": str(port),
        "MEMSTREAM_EMBED_THREADS": str(config["threads"]),  # 0: the process decides
        "MEMSTREAM_LOG_LEVEL": "WARNING",
    }
    if config["runtime"]:
        env["MEMSTREAM_EMBED_RUNTIME"] = config["runtime"]
    if config["code"] is not None:
        env["PYTHONPATH"] = str(config["code"] / "services")
    command = [sys.executable, "-c", "from memstream.entrypoints.cli import app; app()"]
    worker = subprocess.Popen(
        [*command, "worker", "--role", "segmenter", "--host", "127.0.0.1"], env=env
    )
    return worker, port


async def wait_ready(worker: Any, port: int) -> float:
    started = time.perf_counter()
    deadline = time.monotonic() + READY_TIMEOUT_S
    async with aiohttp.ClientSession() as session:
        while True:
            if worker.poll() is not None:
                raise RuntimeError("the worker exited during startup")
            if time.monotonic() > deadline:
                raise TimeoutError("the worker did not become ready")
            try:
                async with session.get(f"http://127.0.0.1:{port}/readyz") as reply:
                    if reply.status == 200:
                        return time.perf_counter() - started
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)


async def measure(
    settings: Settings, scratch: Path, config: dict[str, Any], turns: int, rate: float, users: int
) -> dict[str, Any]:
    launched = time.perf_counter()
    worker, port = start_worker(settings, scratch, config)
    catalog = load_catalog(settings.broker.topic_prefix)
    redis = aioredis.from_url(settings.redis.url)
    tree = RedisTree(redis, settings.redis.namespace)
    publisher = KafkaPublisher.for_bootstrap(settings.broker.bootstrap)
    await publisher.start()
    try:
        ready_probe_s = await wait_ready(worker, port)
        ready_s = time.perf_counter() - launched
        published: dict[tuple[str, str], float] = {}
        latencies: dict[tuple[str, str], float] = {}
        run_id = f"{time.time_ns():x}"
        done_publishing = asyncio.Event()

        async def publish() -> None:
            start = time.perf_counter()
            for n in range(turns):
                # A steady rate: each turn at its slot, however long the last send took.
                delay = start + n / rate - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                user = f"fresh-{run_id}-{n % users}"
                event_id = f"t{n}"
                event = {
                    "type": "turn.v1",
                    "event_id": event_id,
                    "user_id": user,
                    "session_id": "live",
                    "seq": n // users,
                    "speaker": "Ana",
                    "role": "other",
                    "text": sentence(random.Random(n)),
                    "ts": datetime.now(UTC).isoformat(),
                    "tz": "UTC",
                }
                published[(user, segment_id(user, [event_id]))] = time.perf_counter()
                await publisher.producer.send_and_wait(
                    catalog.turns.name, key=user.encode(), value=encode_value(event)
                )
            done_publishing.set()

        async def watch() -> None:
            deadline = time.monotonic() + turns / rate + 120
            while not done_publishing.is_set() or len(latencies) < len(published):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{len(published) - len(latencies)} L1s never appeared")
                pending: dict[str, list[str]] = {}
                for user, node in published.keys() - latencies.keys():
                    pending.setdefault(user, []).append(node)
                for user, nodes in pending.items():
                    for found in await tree.get_many(user, nodes):
                        key = (user, found.id)
                        latencies[key] = time.perf_counter() - published[key]
                await asyncio.sleep(POLL_S)

        await asyncio.gather(publish(), watch())
        ordered = [latencies[key] * 1000 for key in published]  # in publish order
    finally:
        await publisher.stop()
        await redis.aclose()
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    return {
        "time_to_ready_s": round(ready_s, 2),
        "readyz_polled_for_s": round(ready_probe_s, 2),
        "turns": len(ordered),
        "rate_per_s": rate,
        "first_turn_ms": round(ordered[0], 1),
        "first_10_max_ms": round(max(ordered[:10]), 1),
        "p50_ms": round(nearest_rank(ordered, 50), 1),
        "p95_ms": round(nearest_rank(ordered, 95), 1),
        "p99_ms": round(nearest_rank(ordered, 99), 1),
        "max_ms": round(max(ordered), 1),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"configurations": {}}
    with tempfile.TemporaryDirectory(prefix="memstream-bench-") as tmp:
        scratch = Path(tmp)
        base = Settings(data_dir=scratch / "stack", kafka_bootstrap="", redis_url="")
        with BackgroundStack(base) as stack:
            served = stack.settings()
            for round_ in range(args.rounds):
                for number, config in enumerate(args.config):
                    print(f"round {round_ + 1}: {config['name']}", flush=True)
                    figures = asyncio.run(
                        measure(
                            served,
                            scratch / f"run-{round_}-{number}",
                            config,
                            args.turns,
                            args.rate,
                            args.users,
                        )
                    )
                    print(f"  {json.dumps(figures)}", flush=True)
                    report["configurations"].setdefault(config["name"], []).append(figures)
    report["setup"] = {
        "worker": "memstream worker --role segmenter, fresh process per run, offline LLM",
        "stack": "embedded: Tansu broker, redis-server, qdrant-edge in the worker",
        "recallable": "the L1 node is in Redis (written after its vectors are in Qdrant)",
        "users": args.users,
        "target": TARGET,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "note": "shared machines: compare configurations of the same run only",
    }
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Where to write the JSON.")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--rate", type=float, default=20.0, help="Turns per second.")
    parser.add_argument("--users", type=int, default=5)
    parser.add_argument(
        "--config",
        type=parse_config,
        nargs="+",
        default=[parse_config("")],
        help="Worker configurations, e.g. runtime=onnx-int8 code=/tmp/main.",
    )
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    report = run(args)
    write_report(args.out, report)
    for name, rounds in report["configurations"].items():
        for f in rounds:
            print(
                f"{name}: ready {f['time_to_ready_s']} s  first {f['first_turn_ms']} ms  "
                f"p50 {f['p50_ms']}  p95 {f['p95_ms']}  p99 {f['p99_ms']} ms"
            )


if __name__ == "__main__":
    main()
