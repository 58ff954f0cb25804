"""`memstream recall` without stores or a URL says what to configure."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from memstream.entrypoints.recall_command import recall


def test_recall_without_stores_explains_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MEMSTREAM_REDIS_URL", "MEMSTREAM_KAFKA_BOOTSTRAP", "MEMSTREAM_RECALL_URL"):
        monkeypatch.delenv(name, raising=False)
    cli = typer.Typer()
    cli.command()(recall)
    result = CliRunner().invoke(cli, ["u1", "where did I hike?"])
    assert result.exit_code == 1
    assert "MEMSTREAM_REDIS_URL" in result.output and "--url" in result.output
