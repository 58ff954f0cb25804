"""The lab's commands in the `memstream` CLI: `memstream bench <name>` runs a benchmark with
its own flags, as `python -m memstream_lab.bench.<name>` does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstream.entrypoints.cli import app
from memstream_lab.bench import cli_start
from memstream_lab.bench.commands import BENCHMARKS, summary


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (["bench", "--help"], "recall-latency"),
        (["bench", "cli-start", "--help"], "--runs"),
        (["bench", "ingest", "--help"], "--publisher"),
    ],
)
def test_bench_lists_the_benchmarks_and_each_shows_its_flags(
    command: list[str], shown: str
) -> None:
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    assert shown in result.output


def test_a_benchmark_gets_the_rest_of_the_command_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr(cli_start, "main", seen.append)
    out = tmp_path / "start.json"
    result = CliRunner().invoke(app, ["bench", "cli-start", "--out", str(out), "--runs", "2"])
    assert result.exit_code == 0, result.output
    assert seen == [["--out", str(out), "--runs", "2"]]


def test_an_unknown_benchmark_is_refused() -> None:
    result = CliRunner().invoke(app, ["bench", "no_such_bench"])
    assert result.exit_code == 2
    assert "no_such_bench" in result.output


@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_benchmark_also_runs_as_a_module(name: str) -> None:
    assert summary(name)
    done = subprocess.run(
        [sys.executable, "-m", f"memstream_lab.bench.{name}", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout
