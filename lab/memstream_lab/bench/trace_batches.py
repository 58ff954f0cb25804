"""Where a benchmark's slow quiet turns waited, from a `--trace` file (`bench.span_file`).

For each phase: the main path's batches (`memstream.segmenter` spans) and the overflow's
(`memstream.overflow`), how busy each kept the segmenter, and for the slowest of the quiet
tenant's turns (its p99 and above) how their time split: waiting for the batch that wrote
them to begin (and what ran meanwhile: main batches, overflow batches, nothing), then inside
that batch until written.

    python -m memstream_lab.bench.trace_batches TRACE.jsonl
"""

from __future__ import annotations

import argparse
import bisect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAIN, OVERFLOW = "memstream.segmenter", "memstream.overflow"
SLOWEST_SHARE = 0.01


@dataclass(frozen=True)
class Batch:
    name: str
    start: float
    end: float
    records: int


def load(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[Batch]]:
    phases: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    batches: list[Batch] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        if item["kind"] == "phase":
            phases.append(item)
        elif item["kind"] == "turn":
            turns.append(item)
        elif item["name"] in (MAIN, OVERFLOW):
            count = item["attributes"].get("messaging.batch.message_count") or 0
            batches.append(Batch(item["name"], item["start"], item["end"], int(count)))
    batches.sort(key=lambda b: b.start)
    return phases, turns, batches


def busy_in(batches: Sequence[Batch], name: str, start: float, end: float) -> float:
    """Seconds batches of `name` ran within [start, end]."""
    return sum(max(0.0, min(b.end, end) - max(b.start, start)) for b in batches if b.name == name)


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def describe(
    phase: dict[str, Any], turns: Sequence[dict[str, Any]], batches: Sequence[Batch]
) -> dict[str, Any]:
    start, end = phase["start"], phase["end"]
    inside = [b for b in batches if start <= b.start <= end]
    mains = [b for b in inside if b.name == MAIN]
    seconds = end - start
    found: dict[str, Any] = {
        "phase": phase["phase"],
        "seconds": round(seconds, 1),
        "main_batches": len(mains),
        "main_busy": round(busy_in(batches, MAIN, start, end) / seconds, 2),
        "overflow_busy": round(busy_in(batches, OVERFLOW, start, end) / seconds, 2),
        "overflow_batches": len(inside) - len(mains),
        "main_ms": {
            q: round(1000 * _quantile([b.end - b.start for b in mains], v), 1)
            for q, v in (("p50", 0.5), ("p95", 0.95), ("max", 1.0))
        },
        "main_records": {
            q: _quantile([b.records for b in mains], v) for q, v in (("p50", 0.5), ("max", 1.0))
        },
    }
    written = [t for t in turns if t["phase"] == phase["phase"] and t["freshness_ms"] is not None]
    written.sort(key=lambda t: t["freshness_ms"])
    slowest = written[int(len(written) * (1 - SLOWEST_SHARE)) :]
    starts = [b.start for b in mains]
    waits = []
    for turn in slowest:
        at = turn["published"] + turn["freshness_ms"] / 1000
        n = bisect.bisect_right(starts, at) - 1
        if n < 0:
            continue
        batch = mains[n]
        before = (turn["published"], batch.start)
        waits.append(
            {
                "freshness_ms": round(turn["freshness_ms"]),
                "until_batch_ms": round(1000 * (batch.start - turn["published"])),
                "in_batch_ms": round(1000 * (at - batch.start)),
                "batch_records": batch.records,
                "meanwhile_main_ms": round(1000 * busy_in(batches, MAIN, *before)),
                "meanwhile_overflow_ms": round(1000 * busy_in(batches, OVERFLOW, *before)),
                "sent_s_into_phase": round(turn["published"] - start, 2),
            }
        )
    found["slowest"] = waits
    return found


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    args = parser.parse_args(argv)
    phases, turns, batches = load(args.trace)
    for phase in phases:
        found = describe(phase, turns, batches)
        slowest = found.pop("slowest")
        print(json.dumps(found))
        for wait in slowest:
            print("   ", json.dumps(wait))


if __name__ == "__main__":
    main()
