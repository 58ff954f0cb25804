"""CLI start time: wall time of `memstream --help` and of the commands' help, each in a fresh
interpreter, several times (median and best).

    python -m memstream_lab.bench.cli_start --out bench-results/cli-start.json

The target is under 0.5 s for `--help` and every command that does not need the model (the
commands import the heavy modules inside themselves). The time to ready of the processes
that do load the model is measured by `l1_freshness` (a worker) and `recall_load` (the API).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memstream_lab.measure import write_report

COMMANDS = (
    ("--help",),
    ("worker", "--help"),
    ("serve", "--help"),
    ("topics", "--help"),
    ("recall", "--help"),
)
TARGET_S = 0.5


def time_command(args: Sequence[str], runs: int) -> dict[str, Any]:
    command = [sys.executable, "-c", "from memstream.entrypoints.cli import app; app()", *args]
    times: list[float] = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - began)
    return {
        "median_s": round(statistics.median(times), 3),
        "best_s": round(min(times), 3),
        "runs": runs,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Where to write the JSON.")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    figures = {" ".join(c): time_command(c, args.runs) for c in COMMANDS}
    report = {
        "commands": figures,
        "target_s": TARGET_S,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "note": "wall time of a fresh interpreter; includes Python's own start (~0.05 s)",
    }
    write_report(args.out, report)
    for name, f in figures.items():
        print(f"memstream {name}: median {f['median_s']} s, best {f['best_s']} s")


if __name__ == "__main__":
    main()
