"""The lab's sub-commands of `memstream`, declared in lab/pyproject.toml (`memstream.commands`).

The `memstream` command loads this module to list them; each loads what it runs only when it
runs, so `memstream --help` stays fast. Each takes the rest of the command line, `--help`
included, and the program name to show in its usage.
"""

from __future__ import annotations

from collections.abc import Sequence


def eval_command(args: Sequence[str], prog_name: str) -> None:
    """Benchmarks of recall quality (LoCoMo, knowledge updates)."""
    from memstream_lab.eval.commands import eval_app

    eval_app(args=list(args), prog_name=prog_name)


def bench_command(args: Sequence[str], prog_name: str) -> None:
    """Run one benchmark with its own flags: `memstream bench <name> --help`."""
    from memstream_lab.bench.commands import bench_app

    bench_app(args=list(args), prog_name=prog_name)
