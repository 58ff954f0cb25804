"""Read-your-writes: publish a turn, then recall with its receipt; the time until the recall
answers with the turn in it, p50/p95/p99, at 20 and at 200 turns per second.

    python -m memstream_lab.bench.read_your_writes --out bench-results/read-your-writes.json

The embedded stack runs as `memstream up` in its own process (broker, Redis, Qdrant in
process, the segmenter, consolidator, clock and recall API), as a user would start it. This
process is the agent: at a steady `--rate` it publishes a user's message with `flush` (so it
is written at once, not with a reply: docs/read-your-writes.md) and, as soon as the broker
acknowledges it, recalls with its receipt as `after` and `wait_ms` = `--wait-ms`. Each turn
runs in its own task, so a slow recall does not hold back the next publish. Reported per
rate: the publish acknowledgement and the publish-to-answer time (p50/p95/p99/max, nearest
rank), the part of it the server spent waiting for the segmenter (`timings_ms.after`), and
how many answers were still `pending` at the wait's end (their time is the wait).
Messages go round `--users` users. The machine is shared: run it quietly for figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memstream.client import AsyncMemstreamProducer, AsyncRecallClient
from memstream_lab.bench.synthetic import sentence
from memstream_lab.measure import free_port, nearest_rank, write_report

TARGET = "p99 < 1 s from publish to an answer that holds the turn"
START_TIMEOUT_S = 300.0


class StackProcess:
    """`memstream up` in a process of its own, read until it says it is ready."""

    def __init__(self, scratch: Path, max_wait_ms: int) -> None:
        env = {
            **os.environ,
            "MEMSTREAM_DATA_DIR": str(scratch),
            "MEMSTREAM_API_PORT": str(free_port()),
            "MEMSTREAM_API_MAX_WAIT_MS": str(max_wait_ms),
            "MEMSTREAM_LOG_LEVEL": "WARNING",
        }
        command = [sys.executable, "-c", "from memstream.entrypoints.cli import app; app()"]
        self.process = subprocess.Popen(
            [*command, "up"], env=env, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.endpoints: dict[str, str] = {}

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        assert self.process.stdout is not None
        for line in self.process.stdout:
            name, sep, value = line.strip().partition("=")
            if sep and name.startswith("MEMSTREAM_"):
                self.endpoints[name] = value
            if line.startswith("Ready."):
                return
            if time.monotonic() > deadline:
                break
        raise RuntimeError("memstream up did not become ready")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)  # as Ctrl-C: every part stops in order
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


async def measure(
    endpoints: dict[str, str], rate: float, turns: int, users: int, wait_ms: int
) -> dict[str, Any]:
    run_id = f"{time.time_ns():x}"
    acks: list[float] = []
    answers: list[float] = []
    waits: list[float] = []
    pending = 0
    async with (
        AsyncMemstreamProducer(endpoints["MEMSTREAM_KAFKA_BOOTSTRAP"], idempotent=False) as out,
        AsyncRecallClient(endpoints["MEMSTREAM_RECALL_URL"], timeout_s=60) as memory,
    ):

        async def turn(n: int) -> None:
            nonlocal pending
            user = f"ryw-{run_id}-{n % users}"
            text = sentence(random.Random(n))
            started = time.perf_counter()
            receipt = await out.publish_turn(
                user_id=user, session_id="live", seq=n // users, text=text, flush=True
            )
            acks.append((time.perf_counter() - started) * 1000)
            answer = await memory.recall(user, text, after=receipt, wait_ms=wait_ms)
            answers.append((time.perf_counter() - started) * 1000)
            waits.append(answer.timings_ms["after"])
            pending += answer.pending

        tasks = []
        start = time.perf_counter()
        for n in range(turns):
            # A steady rate: each turn at its slot, however long the last ones take.
            delay = start + n / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(turn(n)))
        await asyncio.gather(*tasks)
    return {
        "rate_per_s": rate,
        "turns": turns,
        "pending": pending,
        "publish_ack_ms": _spread(acks),
        "publish_to_answer_ms": _spread(answers),
        # The server's part: how long the read waited for the segmenter (`timings_ms.after`).
        "server_wait_ms": _spread(waits),
    }


def _spread(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50": round(nearest_rank(values, 50), 1),
        "p95": round(nearest_rank(values, 95), 1),
        "p99": round(nearest_rank(values, 99), 1),
        "max": round(max(values), 1),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"rates": []}
    with tempfile.TemporaryDirectory(prefix="memstream-bench-") as tmp:
        stack = StackProcess(Path(tmp), args.wait_ms)
        try:
            stack.wait_ready()
            for rate in args.rates:
                turns = max(1, round(rate * args.seconds))
                print(f"{rate:g} turns/s, {turns} turns", flush=True)
                figures = asyncio.run(
                    measure(stack.endpoints, rate, turns, args.users, args.wait_ms)
                )
                print(f"  {figures}", flush=True)
                report["rates"].append(figures)
        finally:
            stack.stop()
    report["setup"] = {
        "stack": "memstream up (embedded: Tansu, redis-server, qdrant-edge), default settings",
        "turn": "a user's message published with flush, then recall(after=receipt)",
        "wait_ms": args.wait_ms,
        "users": args.users,
        "target": TARGET,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "note": "the agent and the stack share the machine; run it on a quiet one",
    }
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Where to write the JSON.")
    parser.add_argument("--rates", type=float, nargs="+", default=[20.0, 200.0])
    parser.add_argument("--seconds", type=float, default=30.0, help="Publishing time per rate.")
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--wait-ms", type=int, default=5_000, help="Each recall's wait_ms.")
    args = parser.parse_args(argv)
    report = run(args)
    write_report(args.out, report)
    for figures in report["rates"]:
        spread = figures["publish_to_answer_ms"]
        print(
            f"{figures['rate_per_s']:g}/s: p50 {spread['p50']}  p95 {spread['p95']}  "
            f"p99 {spread['p99']} ms  pending {figures['pending']}/{figures['turns']}"
        )


if __name__ == "__main__":
    main()
