"""Read-your-writes: publish a turn, then recall with its receipt; the time until the recall
answers with the turn in it, p50/p95/p99, at 20 and at 200 turns per second.

    python -m memstream_lab.bench.read_your_writes --out bench-results/read-your-writes.json

The embedded stack runs as `memstream up` in its own process (broker, Redis, Qdrant in
process, the segmenter, consolidator, clock and recall API), as a user would start it. This
process is the agent: at a steady `--rate` it publishes a user's message with `flush` (so it
is written at once, not with a reply: docs/read-your-writes.md) and, as soon as the broker
acknowledges it, recalls with its receipt as `after` and `wait_ms` = `--wait-ms`. Each turn
runs in its own task, so a slow recall does not hold back the next publish. The agent
shares the cores it measures, so by default it recalls over kept-alive connections with
plain JSON (`--client sdk`: the SDK's AsyncRecallClient, which costs the agent about twice
the CPU a turn). Before the first rate it publishes and recalls until a turn is answered:
`Ready.` comes once the API listens, which can be before the consumer has its partitions.

Reported per rate: the publish acknowledgement and the publish-to-answer time
(p50/p95/p99/max, nearest rank), the part of it the server spent waiting for the segmenter
(`timings_ms.after`), how many answers were still `pending` at the wait's end (their time is
the wait) and how many recalls the API refused (503, past its connection limit), and the
CPU each process spent per turn (`cpu.ms_per_turn`: `stack` is the `memstream up` process,
the event loop of the segmenter and the API; `api` the API's own process where it has one
(`--this-setting UP_API_PROCESS=true`); `model` their embedding processes; `broker`,
`redis`; `agent` this one) with the cores all of them kept busy. The CPU is measured until
the segmenter has passed every turn of the rate (`seconds_to_drain` after the last answer):
a stack that fell behind still does the work of the turns whose recall answered pending.
On shared cores the CPU a turn costs moves much less than the latencies, and it says what
rate two cores can carry.
`--baseline DIR` runs a stack from another source tree (e.g. `git archive` of main) too,
alternating with this one for `--rounds`, for before/after figures of one run. Messages go
round `--users` users. The machine is shared: run it quietly for figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aiokafka.errors import KafkaError

from memstream_lab.bench.agent_turns import measure
from memstream_lab.bench.up_stack import StackProcess, each_stack, setting_pairs
from memstream_lab.measure import write_report

TARGET = "p99 < 1 s from publish to an answer that holds the turn"


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Each round starts a stack from this tree (and one from `--baseline`, alternating)
    and measures every rate on it."""
    report: dict[str, Any] = {"rates": []}

    def measured(name: str, round_: int, stack: StackProcess) -> None:
        for rate in args.rates:
            turns = max(1, round(rate * args.seconds))
            print(f"{name}, round {round_}: {rate:g} turns/s, {turns} turns")
            try:
                figures = asyncio.run(
                    measure(stack.endpoints, rate, turns, args.users, args.wait_ms, args.client)
                )
            except KafkaError as error:  # the broker fell behind by its timeout
                figures = {"rate_per_s": rate, "turns": turns, "error": repr(error)}
            figures = {"code": name, "round": round_, **figures}
            print(f"  {figures}", flush=True)
            report["rates"].append(figures)

    this_settings = setting_pairs(args.this_setting)
    each_stack(args.rounds, args.baseline, args.wait_ms, measured, this_settings)
    report["setup"] = {
        "stack": "memstream up (embedded: Tansu, redis-server, qdrant-edge), default settings",
        "turn": "a user's message published with flush, then recall(after=receipt)",
        "wait_ms": args.wait_ms,
        "users": args.users,
        "client": args.client,
        "baseline": str(args.baseline) if args.baseline else None,
        "this_settings": this_settings,
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
    parser.add_argument(
        "--client",
        choices=("lean", "sdk"),
        default="lean",
        help="How the agent recalls: kept-alive connections and plain JSON (lean), or the "
        "SDK's AsyncRecallClient.",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="A source tree (e.g. `git archive` of main) whose stack is measured in the same "
        "run, alternating with this one, for before/after figures.",
    )
    parser.add_argument("--rounds", type=int, default=1, help="Stacks started per code.")
    parser.add_argument(
        "--this-setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="A setting for this tree's stacks only, e.g. UP_API_PROCESS=true (repeatable).",
    )
    args = parser.parse_args(argv)
    report = run(args)
    write_report(args.out, report)
    for figures in report["rates"]:
        if "error" in figures:
            print(f"{figures['code']} {figures['round']} {figures['rate_per_s']:g}/s: failed")
            continue
        spread = figures["publish_to_answer_ms"] or {"p50": None, "p95": None, "p99": None}
        print(
            f"{figures['code']} {figures['round']} {figures['rate_per_s']:g}/s: "
            f"p50 {spread['p50']}  p95 {spread['p95']}  p99 {spread['p99']} ms  "
            f"pending {figures['pending']}/{figures['turns']}"
        )


if __name__ == "__main__":
    main()
