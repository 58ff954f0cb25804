"""Recall CPU a request on `memstream up`: the event loop's CPU for N recalls with a token.

    memstream bench recall-cpu --recalls 1500 --rounds 3 --baseline <git archive of main> \
        --out F [--py-spy DIR]

Each round starts `memstream up` from this tree (and from `--baseline`, alternating),
publishes `--turns` turns of `--users` users with `flush` (as the read-your-writes agent
does), waits until the segmenter has passed them all, then asks `--recalls` recalls,
`--concurrency` at once, each a user's latest message with its receipt (a token already
passed: no wait, the query's vector in the embedder's recent ones). The figure is the
stack process's CPU over the recalls, less its idle CPU over as long just before, a recall:
what `read-your-writes-cpu` gets as a difference of two rates, without the segmenter's
steps in the span. `--py-spy DIR` records each stack during its recalls (py-spy on the
path), for where the time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

from memstream.client import AsyncMemstreamProducer, Receipt
from memstream_lab.bench.synthetic import sentence
from memstream_lab.bench.up_stack import (
    LeanRecalls,
    StackProcess,
    each_stack,
    until_consuming,
)
from memstream_lab.measure import write_report

DRAIN_TIMEOUT_S = 120.0
IDLE_S = 2.0  # how long the stack's idle CPU is read before the recalls


async def _turns(
    endpoints: dict[str, str], turns: int, users: int, lean: LeanRecalls
) -> dict[str, tuple[str, Receipt]]:
    """Each user's latest message and receipt, once the segmenter has passed them all."""
    run_id = f"{time.time_ns():x}"
    latest: dict[str, tuple[str, Receipt]] = {}
    async with AsyncMemstreamProducer(
        endpoints["MEMSTREAM_KAFKA_BOOTSTRAP"], idempotent=False
    ) as out:
        await until_consuming(out, lean)
        for n in range(turns):
            user, text = f"rc-{run_id}-{n % users}", sentence(random.Random(n))
            receipt = await out.publish_turn(
                user_id=user, session_id="live", seq=n // users, text=text, flush=True
            )
            latest[user] = (text, receipt)
    deadline = time.perf_counter() + DRAIN_TIMEOUT_S
    left = dict(latest)
    while left and time.perf_counter() < deadline:
        for user, (text, receipt) in list(left.items()):
            answer = await lean.recall(user, text, receipt.token, 5_000)
            if answer is not None and not answer["pending"]:
                del left[user]
    if left:
        raise RuntimeError(f"{len(left)} users' turns not written within {DRAIN_TIMEOUT_S} s")
    return latest


async def _recalls(
    lean: LeanRecalls, latest: dict[str, tuple[str, Receipt]], count: int, concurrency: int
) -> None:
    asks = list(latest.items())
    queue = iter(range(count))

    async def worker() -> None:
        for n in queue:
            user, (text, receipt) = asks[n % len(asks)]
            answer = await lean.recall(user, text, receipt.token, 5_000)
            if answer is None or answer["pending"]:
                raise RuntimeError(f"recall {n} refused or pending")

    await asyncio.gather(*(worker() for _ in range(concurrency)))


def _measure(stack: StackProcess, args: argparse.Namespace, profile: Path | None) -> float:
    """The stack's CPU milliseconds a recall."""
    process = psutil.Process(stack.process.pid)

    async def go() -> float:
        lean = LeanRecalls(stack.endpoints["MEMSTREAM_RECALL_URL"])
        latest = await _turns(stack.endpoints, args.turns, args.users, lean)
        await _recalls(lean, latest, min(args.recalls, 200), args.concurrency)  # warm-up
        idle_start, cpu = time.perf_counter(), process.cpu_times()
        await asyncio.sleep(IDLE_S)
        idle_rate = (_seconds(process.cpu_times()) - _seconds(cpu)) / (
            time.perf_counter() - idle_start
        )
        spy = _py_spy(stack.process.pid, profile) if profile is not None else None
        start, cpu = time.perf_counter(), process.cpu_times()
        await _recalls(lean, latest, args.recalls, args.concurrency)
        spent = _seconds(process.cpu_times()) - _seconds(cpu)
        spent -= idle_rate * (time.perf_counter() - start)
        if spy is not None:
            spy.send_signal(signal.SIGINT)  # py-spy writes its profile as it stops
            spy.wait(timeout=120)
        await lean.close()
        return round(spent * 1000 / args.recalls, 3)

    return asyncio.run(go())


def _seconds(times: Any) -> float:
    return float(times.user + times.system)


def _py_spy(pid: int, out: Path) -> subprocess.Popen[bytes]:
    """py-spy recording `pid` until stopped with SIGINT."""
    # --gil: the samples of the thread holding the interpreter, where the loop's CPU goes.
    command = [shutil.which("py-spy") or "py-spy", "record", "--pid", str(pid), "--gil"]
    command += ["--rate", "200", "--format", "raw", "--output", str(out), "--nonblocking"]
    spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # attached before the first recall
    return spy


def run(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"rounds": []}

    def measured(name: str, round_: int, stack: StackProcess) -> None:
        profile = args.py_spy / f"{name}-{round_}.txt" if args.py_spy else None
        ms = _measure(stack, args, profile)
        figures = {"code": name, "round": round_, "stack_cpu_ms_per_recall": ms}
        print(f"  {figures}", flush=True)
        report["rounds"].append(figures)

    each_stack(args.rounds, args.baseline, 5_000, measured)
    report["setup"] = {
        "turns": args.turns,
        "users": args.users,
        "recalls": args.recalls,
        "concurrency": args.concurrency,
        "baseline": str(args.baseline) if args.baseline else None,
    }
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Where to write the JSON.")
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--recalls", type=int, default=1_500)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--baseline", type=Path, help="A source tree measured alternately.")
    parser.add_argument("--rounds", type=int, default=1, help="Stacks started per code.")
    parser.add_argument("--py-spy", type=Path, help="A folder for each stack's profile.")
    args = parser.parse_args(argv)
    if args.py_spy is not None:
        args.py_spy.mkdir(parents=True, exist_ok=True)
    report = run(args)
    write_report(args.out, report)


if __name__ == "__main__":
    main()
