"""The `memstream` command: a fast start, and the tools' own command lines behind it (the
lab's `eval` and `bench` found through its entry points)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstream.entrypoints.cli import app

ROOT = Path(__file__).resolve().parents[3]
# What the command tree must not load before a command runs: the stack and the tools.
HEAVY = ("faust", "fastapi", "uvicorn", "aiokafka", "qdrant_client", "openai", "torch")


def test_the_command_tree_loads_nothing_heavy() -> None:
    code = (
        "import sys, memstream.entrypoints.cli\n"
        "print(sorted({m.partition('.')[0] for m in sys.modules} & set(sys.argv[1:])))\n"
        "print(sorted(m for m in sys.modules if m.startswith(('memstream_lab', "
        "'memstream.entrypoints.embedded', 'memstream.bootstrap', "
        "'memstream.entrypoints.runner'))))"
    )
    env = os.environ | {"PYTHONPATH": str(ROOT / "services")}
    done = subprocess.run(
        [sys.executable, "-c", code, *HEAVY], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "[]"]


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (["eval", "--help"], "locomo"),
        (["demo", "--help"], "--timeout"),
        (["up", "--help"], "--data-dir"),
    ],
)
def test_a_tool_parses_the_rest_of_the_command_line(command: list[str], shown: str) -> None:
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    assert shown in result.output


def test_a_tool_rejects_what_it_does_not_know() -> None:
    result = CliRunner().invoke(app, ["demo", "--no-such-option"])
    assert result.exit_code == 2
    assert "--no-such-option" in result.output


def test_serve_without_keys_refuses_before_connecting_to_anything(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Port 1 answers nothing: had serve tried the broker first, it would fail another way.
    monkeypatch.setenv("MEMSTREAM_KAFKA_BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setenv("MEMSTREAM_REDIS_URL", "redis://127.0.0.1:1/0")
    monkeypatch.delenv("MEMSTREAM_RECALL_API_KEYS", raising=False)
    monkeypatch.delenv("MEMSTREAM_RECALL_AUTH_DISABLED", raising=False)
    result = CliRunner().invoke(app, ["serve"])
    assert result.exit_code == 2
    assert "MEMSTREAM_RECALL_API_KEYS" in result.output
    assert "MEMSTREAM_RECALL_AUTH_DISABLED" in result.output


def test_serve_with_workers_needs_a_shared_qdrant(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSTREAM_KAFKA_BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setenv("MEMSTREAM_REDIS_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setenv("MEMSTREAM_RECALL_AUTH_DISABLED", "true")
    monkeypatch.setenv("MEMSTREAM_API_WORKERS", "2")
    monkeypatch.delenv("MEMSTREAM_QDRANT_URL", raising=False)
    result = CliRunner().invoke(app, ["serve"])
    assert result.exit_code == 2
    assert "MEMSTREAM_QDRANT_URL" in result.output
