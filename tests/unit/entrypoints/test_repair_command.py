"""`memstream repair`: its arguments, and a clear answer when the index is held elsewhere."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstream.adapters.qdrant.edge import EdgeIndex
from memstream.entrypoints.cli import app


def test_users_are_named_or_all_not_both() -> None:
    for args in (["repair"], ["repair", "--user", "ana", "--all"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2
        assert "--user" in result.output


def test_an_index_directory_open_in_another_process_is_said_plainly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "MEMSTREAM_DATA_DIR": str(tmp_path),
        "MEMSTREAM_EMBEDDER": "hashing",
        "MEMSTREAM_REDIS_URL": "redis://127.0.0.1:1",  # never reached: the index fails first
        "MEMSTREAM_KAFKA_BOOTSTRAP": "127.0.0.1:1",
        "MEMSTREAM_QDRANT_URL": "",
    }.items():
        monkeypatch.setenv(name, value)
    from memstream.settings import Settings

    settings = Settings()
    held = EdgeIndex.open(
        tmp_path / "qdrant-edge" / settings.qdrant.collection, settings.embedding.dim
    )
    try:
        result = CliRunner().invoke(app, ["repair", "--user", "ana"])
    finally:
        asyncio.run(held.close())
    assert result.exit_code == 2, result.output
    assert "open in another process" in result.output


@pytest.mark.parametrize("command", ["repair", "rebuild"])
@pytest.mark.parametrize("unset", ["MEMSTREAM_REDIS_URL", "MEMSTREAM_KAFKA_BOOTSTRAP"])
def test_a_command_on_the_stores_says_what_to_set_when_none_are_configured(
    command: str, unset: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMSTREAM_REDIS_URL", "redis://127.0.0.1:1")  # never reached
    monkeypatch.setenv("MEMSTREAM_KAFKA_BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setenv(unset, "")
    result = CliRunner().invoke(app, [command, "--user", "ana"])
    assert result.exit_code == 2, result.output
    assert "no stores configured: set MEMSTREAM_REDIS_URL and MEMSTREAM_KAFKA_BOOTSTRAP" in (
        result.output
    )
