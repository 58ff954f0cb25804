"""The long-running commands set the garbage collector before their parts start and freeze
what start-up built once they run (`entrypoints/collector.py`)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest
import typer

from memstream.entrypoints import process_commands, runner
from memstream.entrypoints.collector import (
    LONG_RUNNING_THRESHOLDS,
    collect_less_often,
    freeze_start_up,
)


@pytest.fixture
def restored_collector() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.set_threshold(*thresholds)
    gc.unfreeze()


@pytest.fixture
def stores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSTREAM_KAFKA_BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setenv("MEMSTREAM_REDIS_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setenv("MEMSTREAM_RECALL_AUTH_DISABLED", "true")
    monkeypatch.delenv("MEMSTREAM_API_WORKERS", raising=False)


def _captured_run(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Replace the runner the commands start their parts with; the dict gets the collector's
    thresholds when the parts would have started, and the options they would have run with."""
    seen: dict[str, Any] = {}

    async def run_until_stopped(settings: Any, parts: Any, stopping: Any, **options: Any) -> int:
        seen["thresholds"] = gc.get_threshold()
        seen["options"] = options
        return 0

    monkeypatch.setattr(runner, "run_until_stopped", run_until_stopped)
    return seen


@pytest.mark.usefixtures("restored_collector", "stores")
def test_a_worker_collects_less_often_and_freezes_once_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gc.set_threshold(700, 10, 10)  # Python's defaults
    seen = _captured_run(monkeypatch)
    with pytest.raises(typer.Exit) as exited:
        process_commands.worker(role=process_commands.Role.ALL, host="127.0.0.1")
    assert exited.value.exit_code == 0
    assert seen["thresholds"] == LONG_RUNNING_THRESHOLDS
    assert seen["options"]["on_started"] is freeze_start_up


@pytest.mark.usefixtures("restored_collector", "stores")
def test_the_api_collects_less_often_and_freezes_once_serving(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gc.set_threshold(700, 10, 10)
    seen = _captured_run(monkeypatch)
    with pytest.raises(typer.Exit) as exited:
        process_commands.serve(host="127.0.0.1", port=0, data_dir=None)
    assert exited.value.exit_code == 0
    assert seen["thresholds"] == LONG_RUNNING_THRESHOLDS
    assert seen["options"]["on_started"] is freeze_start_up


@pytest.mark.usefixtures("restored_collector")
def test_freezing_keeps_start_up_out_of_later_collections() -> None:
    collect_less_often()
    assert gc.get_threshold() == LONG_RUNNING_THRESHOLDS
    built_at_start = [[] for _ in range(100)]
    freeze_start_up()
    # Frozen objects are in no generation a collection walks.
    collected = {id(o) for o in gc.get_objects()}
    assert gc.get_freeze_count() >= len(built_at_start)
    assert not any(id(x) in collected for x in built_at_start)
