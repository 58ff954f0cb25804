"""Read-your-writes, the CPU of a turn split: the stack's CPU a turn published alone, and
a turn with its recall after it; the difference is what a recall with a token costs.

    memstream bench read-your-writes-cpu --rate 50 --seconds 20 --rounds 3 \
        --baseline <git archive of main> --out F

Each round starts `memstream up` from this tree (and from `--baseline`, alternating) and runs
`agent_turns.measure` twice at one `--rate` the stack keeps up with: first the turns
alone (each a user's message published with `flush`, written as an L1), then turns each
recalled after with its receipt, as the read-your-writes benchmark does. Both are counted
until the segmenter has passed every turn. At a rate the stack carries, no recall is
refused or waits long, so the split says where a turn's CPU goes, which the latencies of a
loaded machine do not.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memstream_lab.bench.agent_turns import measure
from memstream_lab.bench.up_stack import StackProcess, each_stack, setting_pairs
from memstream_lab.measure import write_report


def _split(alone: dict[str, Any], recalled: dict[str, Any]) -> dict[str, Any]:
    """Stack (event loop), API process (with MEMSTREAM_UP_API_PROCESS; else 0) and all
    processes' CPU ms a turn, alone and recalled, and a recall's share: the difference."""
    a, r = alone["cpu"]["ms_per_turn"], recalled["cpu"]["ms_per_turn"]
    kinds = ("stack", "api", "total")
    return {
        "turn_alone_ms": {k: a.get(k, 0.0) for k in kinds},
        "turn_and_recall_ms": {k: r.get(k, 0.0) for k in kinds},
        "recall_ms": {k: round(r.get(k, 0.0) - a.get(k, 0.0), 3) for k in kinds},
        "refused": recalled["refused"],
        "pending": recalled["pending"],
        "publish_to_answer_ms": recalled["publish_to_answer_ms"],
        "seconds_to_drain": [alone["seconds_to_drain"], recalled["seconds_to_drain"]],
        "cores_busy": [alone["cpu"]["cores_busy"], recalled["cpu"]["cores_busy"]],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"rounds": []}
    turns = max(1, round(args.rate * args.seconds))

    def measured(name: str, round_: int, stack: StackProcess) -> None:
        alone, recalled = (
            asyncio.run(
                measure(
                    stack.endpoints,
                    args.rate,
                    turns,
                    args.users,
                    args.wait_ms,
                    "lean",
                    recall_each=recall_each,
                )
            )
            for recall_each in (False, True)
        )
        figures = {"code": name, "round": round_, **_split(alone, recalled)}
        print(f"  {figures}", flush=True)
        report["rounds"].append(figures)

    this_settings = setting_pairs(args.this_setting)
    each_stack(args.rounds, args.baseline, args.wait_ms, measured, this_settings)
    report["setup"] = {
        "rate_per_s": args.rate,
        "turns": turns,
        "users": args.users,
        "wait_ms": args.wait_ms,
        "baseline": str(args.baseline) if args.baseline else None,
        "this_settings": this_settings,
    }
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Where to write the JSON.")
    parser.add_argument("--rate", type=float, default=50.0, help="Turns a second.")
    parser.add_argument("--seconds", type=float, default=20.0, help="Publishing time a part.")
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--wait-ms", type=int, default=5_000, help="Each recall's wait_ms.")
    parser.add_argument("--baseline", type=Path, help="A source tree measured alternately.")
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
    for r in report["rounds"]:
        print(
            f"{r['code']} {r['round']}: turn alone {r['turn_alone_ms']['stack']} ms (stack), "
            f"with recall {r['turn_and_recall_ms']['stack']}, recall {r['recall_ms']['stack']}"
            f" (all processes {r['recall_ms']['total']}), refused {r['refused']}"
        )


if __name__ == "__main__":
    main()
