"""Restarts under live traffic: how soon a killed worker consumes again, and how far
consolidation falls behind meanwhile.

    python -m memstream_lab.bench.restart --out bench-results/restart.json

A standalone broker and Redis (the embedded stack's Tansu and redis-server) in this process;
`memstream worker --role all` in its own, with a stable `MEMSTREAM_KAFKA_GROUP_INSTANCE_ID`
(what a StatefulSet's pod name gives). Live conversations are published throughout at
`--rate` turns per second over `--users` users, each session `--session-turns` turns and
then its `session_end.v1`, which makes its session window (L2) due. The worker is SIGKILLed
and started again at once (as an orchestrator restarts a crashed container), later SIGTERMed
and started again. Reported per restart: seconds from the new process's start to its first
batch and to its first commit, its start-up phases (wall and CPU seconds, from its log), and
the consolidation lag: how many windows were due but not yet consolidated (at most, and
when the worker stopped), and how long each session waited from its end to its L2, for the
sessions that ended while the worker was away, against the steady state before the kill.
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiokafka import TopicPartition
from redis import asyncio as aioredis

from memstream.adapters.kafka.producer import KafkaPublisher
from memstream.adapters.redis.tree import RedisTree
from memstream.contracts.catalog import load_catalog
from memstream.contracts.records import encode_value
from memstream.domain.models import Level
from memstream.settings import Settings
from memstream_lab.bench.synthetic import sentence
from memstream_lab.bench.worker_process import (
    WorkerProcess,
    consuming_after,
    standalone_stack,
    worker_environment,
)
from memstream_lab.measure import nearest_rank, write_report

TARGET = "restart to consuming < 10 s after SIGKILL"
POLL_S = 0.2


@dataclass
class Traffic:
    """What was published and when, and when each session's L2 appeared."""

    users: list[str]
    ended: dict[str, list[float]] = field(default_factory=dict)  # user -> session end times
    consolidated: dict[str, list[float]] = field(default_factory=dict)  # user -> L2 seen at
    pending_samples: list[tuple[float, int]] = field(default_factory=list)  # (t, due - done)

    def pending(self) -> int:
        due = sum(len(v) for v in self.ended.values())
        return due - sum(len(v) for v in self.consolidated.values())

    def waits(self, ended_from: float, ended_to: float) -> list[float]:
        """Seconds from session end to L2 for sessions that ended in [from, to): a user's
        sessions close and consolidate in order, so the k-th L2 is the k-th session's."""
        out: list[float] = []
        for user, ends in self.ended.items():
            for end, seen in zip(ends, self.consolidated.get(user, []), strict=False):
                if ended_from <= end < ended_to:
                    out.append(seen - end)
        return out


async def publish(settings: Settings, traffic: Traffic, args: argparse.Namespace) -> None:
    """Turns at a steady rate, round robin over the users, until cancelled."""
    catalog = load_catalog(settings.broker.topic_prefix)
    publisher = KafkaPublisher.for_bootstrap(settings.broker.bootstrap)
    await publisher.start()
    producer = publisher.producer
    try:
        start = time.monotonic()
        for n in range(10**9):
            delay = start + n / args.rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            index = n % len(traffic.users)
            user = traffic.users[index]
            turn = n // len(traffic.users)
            # Sessions of different lengths per user, so that session ends spread out in time.
            length = args.session_turns + index
            session, seq = divmod(turn, length)
            base = {"user_id": user, "session_id": f"{user}-s{session}"}
            now = datetime.now(UTC).isoformat()
            event = base | {
                "type": "turn.v1",
                "event_id": f"{user}-{turn}",
                "seq": seq,
                "speaker": "Ana" if seq % 2 == 0 else "Bot",
                "role": "user" if seq % 2 == 0 else "assistant",
                "text": sentence(random.Random(n)),
                "ts": now,
            }
            value, key = encode_value(event), user.encode()
            await producer.send_and_wait(catalog.turns.name, key=key, value=value)
            if seq == length - 1:
                end = encode_value(base | {"type": "session_end.v1", "ts": now})
                await producer.send_and_wait(catalog.turns.name, key=key, value=end)
                traffic.ended.setdefault(user, []).append(time.monotonic())
    finally:
        await publisher.stop()


async def watch(settings: Settings, traffic: Traffic) -> None:
    """Poll Redis for each user's L2 count until cancelled."""
    redis = aioredis.from_url(settings.redis.url)
    tree = RedisTree(redis, settings.redis.namespace)
    try:
        while True:
            now = time.monotonic()
            for user in traffic.users:
                have = len(await tree.level_ids(user, Level.SESSION))
                seen = traffic.consolidated.setdefault(user, [])
                seen.extend([now] * (have - len(seen)))
            traffic.pending_samples.append((now, traffic.pending()))
            await asyncio.sleep(POLL_S)
    finally:
        await redis.aclose()


def _summary(waits: list[float]) -> dict[str, Any]:
    if not waits:
        return {"sessions": 0}
    return {
        "sessions": len(waits),
        "p50_s": round(nearest_rank(waits, 50), 2),
        "max_s": round(max(waits), 2),
    }


async def restart_once(
    settings: Settings,
    traffic: Traffic,
    worker: WorkerProcess,
    signum: signal.Signals,
    env: dict[str, str],
    scratch: Path,
    args: argparse.Namespace,
) -> tuple[WorkerProcess, dict[str, Any]]:
    """Stop `worker` with `signum`, start another at once; figures of the restart."""
    catalog = load_catalog(settings.broker.topic_prefix)
    partitions = [
        TopicPartition(spec.name, p)
        for spec in (catalog.turns, catalog.windows)
        for p in range(spec.partitions)
    ]
    steady_from = time.monotonic() - args.steady_s
    steady_peak = max((n for t, n in traffic.pending_samples if t >= steady_from), default=0)
    stopped_at = time.monotonic()
    pending_at_stop = traffic.pending()
    worker.signal(signum)
    code = await worker.exited(timeout_s=60)
    stop_s = time.monotonic() - stopped_at
    new = WorkerProcess(env, scratch / f"worker-{signum.name}.log")
    group = settings.broker.consumer_group
    to_commit = await consuming_after(new, settings.broker.bootstrap, group, partitions)
    back_at = time.monotonic()
    # Live traffic goes on: wait until the backlog is back to the steady state's.
    deadline = time.monotonic() + 120
    while traffic.pending() > steady_peak:
        if time.monotonic() > deadline:
            break  # reported as is: the figure says how far it got
        await asyncio.sleep(POLL_S)
    caught_up_at = time.monotonic()
    await asyncio.sleep(args.steady_s)  # the next stop starts from a steady state again
    phases = new.phases()
    first_batch = next((v["at_s"] for k, v in phases.items() if k.startswith("first batch")), None)
    peak = max((n for t, n in traffic.pending_samples if t >= stopped_at), default=0)
    figures = {
        "signal": signum.name,
        "exit_code": code,
        "stop_s": round(stop_s, 2),
        "restart_to_first_batch_s": first_batch,
        "restart_to_commit_s": round(to_commit, 2),
        "phases": phases,
        "consolidation": {
            "windows_pending_steady_peak": steady_peak,
            "windows_pending_at_stop": pending_at_stop,
            "windows_pending_peak": peak,
            "steady_session_end_to_l2": _summary(traffic.waits(steady_from, stopped_at)),
            "ended_while_away_session_end_to_l2": _summary(traffic.waits(stopped_at, back_at)),
            "ended_after_restart_session_end_to_l2": _summary(
                traffic.waits(back_at, caught_up_at + args.steady_s)
            ),
            "back_to_steady_s_after_restart": round(caught_up_at - new.started, 1),
        },
    }
    return new, figures


async def measure(settings: Settings, scratch: Path, args: argparse.Namespace) -> dict[str, Any]:
    extra = {
        "MEMSTREAM_EMBEDDER": args.embedder,
        "MEMSTREAM_KAFKA_GROUP_INSTANCE_ID": f"{settings.broker.consumer_group}-0"
        if args.static
        else "",
        "MEMSTREAM_MODEL_CACHE_DIR": str(args.model_cache_dir),
        "MEMSTREAM_CLOCK_INTERVAL_S": "1",
    }
    env = worker_environment(settings, extra)
    catalog = load_catalog(settings.broker.topic_prefix)
    partitions = [
        TopicPartition(spec.name, p)
        for spec in (catalog.turns, catalog.windows)
        for p in range(spec.partitions)
    ]
    traffic = Traffic(users=[f"restart-{uuid.uuid4().hex[:6]}-{i}" for i in range(args.users)])
    tasks = [asyncio.create_task(publish(settings, traffic, args))]
    tasks.append(asyncio.create_task(watch(settings, traffic)))
    worker = WorkerProcess(env, scratch / "worker-first.log")
    try:
        first = await consuming_after(
            worker, settings.broker.bootstrap, settings.broker.consumer_group, partitions
        )
        report: dict[str, Any] = {
            "first_start": {"to_commit_s": round(first, 2), "phases": worker.phases()}
        }
        await asyncio.sleep(args.steady_s)  # a steady state to compare against
        report["restarts"] = []
        for signum in (signal.SIGKILL, signal.SIGTERM):
            print(f"{signum.name}, then a restart", flush=True)
            worker, figures = await restart_once(
                settings, traffic, worker, signum, env, scratch, args
            )
            print("  " + json.dumps(figures), flush=True)
            report["restarts"].append(figures)
        return report
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        worker.signal(signal.SIGTERM)
        await worker.exited(timeout_s=30)


def run(args: argparse.Namespace) -> dict[str, Any]:
    with standalone_stack("restart") as (settings, scratch):
        report = asyncio.run(measure(settings, scratch, args))
    report["setup"] = {
        "worker": "memstream worker --role all, static group membership, offline LLM",
        "embedder": args.embedder,
        "broker": "Tansu (embedded stack), standalone",
        "traffic": f"{args.rate} turns/s over {args.users} users, "
        f"sessions of {args.session_turns} turns (+ 1 per user index) then session_end.v1",
        "target": TARGET,
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "note": "wall seconds on a shared machine are noisy; the phases' CPU seconds are not",
    }
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Where to write the JSON.")
    parser.add_argument(
        "--rate",
        type=float,
        default=1.0,
        # Much faster turns leave consolidation no pause in the turns to run in (docs/design.md:
        # "The online path first"), and the lag measured would be that, not the restart's.
        help="Turns per second.",
    )
    parser.add_argument("--users", type=int, default=5)
    parser.add_argument("--session-turns", type=int, default=4)
    parser.add_argument("--steady-s", type=float, default=10.0, help="Traffic before each stop.")
    parser.add_argument("--embedder", default="local", choices=["local", "hashing"])
    parser.add_argument(
        "--model-cache-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "memstream-models",
        help="Exported ONNX graphs (kept between runs: the export is no part of a restart).",
    )
    parser.add_argument(
        "--dynamic", dest="static", action="store_false", help="No group instance id."
    )
    args = parser.parse_args(argv)
    report = run(args)
    write_report(args.out, report)
    for figures in report["restarts"]:
        lag = figures["consolidation"]
        print(
            f"{figures['signal']}: first batch after {figures['restart_to_first_batch_s']} s, "
            f"commit after {figures['restart_to_commit_s']} s; windows pending at most "
            f"{lag['windows_pending_peak']}; sessions ended while away waited "
            f"{lag['ended_while_away_session_end_to_l2']} (steady "
            f"{lag['steady_session_end_to_l2']})"
        )


if __name__ == "__main__":
    main()
