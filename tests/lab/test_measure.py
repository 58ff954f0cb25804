"""The helpers every benchmark shares, and that no benchmark borrows from another."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import memstream_lab.bench
from memstream_lab.bench.commands import BENCHMARKS
from memstream_lab.measure import nearest_rank, percentile, write_report

BENCH_DIR = Path(memstream_lab.bench.__file__).parent


def test_nearest_rank_reports_a_measured_value() -> None:
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert nearest_rank(values, 50) == 3.0
    assert nearest_rank(values, 95) == 5.0
    assert nearest_rank(values, 0) == 1.0
    assert nearest_rank([7.0], 99) == 7.0


def test_percentile_interpolates_between_ranks() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert nearest_rank([1.0, 2.0, 3.0, 4.0], 50) == 2.0


def test_write_report_makes_the_directory(tmp_path: Path) -> None:
    out = tmp_path / "results" / "bench.json"
    write_report(out, {"p95_ms": 1.5, "at": Path("x")}, default=str)
    assert json.loads(out.read_text()) == {"p95_ms": 1.5, "at": "x"}
    assert out.read_text().endswith("}\n")


@pytest.mark.parametrize("name", BENCHMARKS)
def test_no_benchmark_imports_another_benchmark(name: str) -> None:
    tree = ast.parse((BENCH_DIR / f"{name}.py").read_text(encoding="utf-8"))
    imported = {
        node.module.rpartition(".")[2]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.module
        and node.module.startswith("memstream_lab.bench.")
    }
    assert not imported & set(BENCHMARKS), name
