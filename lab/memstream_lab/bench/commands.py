"""`memstream bench <name> [flags]`: one sub-command per benchmark, each given its own flags.

`memstream bench ingest --out x.json` runs what `python -m memstream_lab.bench.ingest --out
x.json` runs. A benchmark's module loads only when it runs; the list shows each one's first
docstring line, read from its source without importing it.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import typer

BENCHMARKS = (
    "cli_start",
    "cluster",
    "export",
    "explorer",
    "fairness",
    "forget",
    "heavy_recall",
    "hostile",
    "house",
    "ingest",
    "knowledge_read",
    "leaf_cells",
    "knowledge_write",
    "l1_freshness",
    "loop_work",
    "read_your_writes",
    "read_your_writes_cpu",
    "rebuild",
    "recall_cpu",
    "recall_latency",
    "recall_load",
    "repair",
    "restart",
    "scale",
    "sealing",
)

bench_app = typer.Typer(
    no_args_is_help=True, add_completion=False, help="Run one benchmark with its own flags."
)


def summary(name: str) -> str:
    """The first line of a benchmark module's docstring, without importing the module."""
    spec = importlib.util.find_spec(f"{__package__}.{name}")
    if spec is None or spec.origin is None:
        return ""
    docstring = ast.get_docstring(ast.parse(Path(spec.origin).read_text(encoding="utf-8")))
    return docstring.splitlines()[0] if docstring else ""


def run_benchmark(name: str, args: list[str]) -> None:
    module = importlib.import_module(f"{__package__}.{name}")
    module.main(args)


def command_name(module: str) -> str:
    """The sub-command of a benchmark module: `recall_load` runs as `recall-load`."""
    return module.replace("_", "-")


def _mount(name: str) -> None:
    @bench_app.command(
        command_name(name),
        help=summary(name),
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        add_help_option=False,
    )
    def _run(ctx: typer.Context) -> None:
        run_benchmark(name, ctx.args)


for _name in BENCHMARKS:
    _mount(_name)
