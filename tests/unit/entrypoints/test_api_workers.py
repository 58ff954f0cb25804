"""The API workers of one `serve` open the port together (`entrypoints/api_workers.py`)."""

from __future__ import annotations

import os
from pathlib import Path

from memstream.entrypoints.api_workers import (
    start_directory,
    wait_for_each_other,
    worker_environment,
)
from memstream.settings import Settings


def test_the_start_directory_is_emptied_and_says_how_many_to_wait_for(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    first = start_directory(settings, 2)
    (first / "warm-12345").touch()  # a worker of the previous start

    again = start_directory(settings, 3)

    assert again == first
    assert sorted(p.name for p in again.iterdir()) == ["expected"]
    assert (again / "expected").read_text() == "3"


async def test_a_warm_worker_waits_until_every_worker_is_warm(tmp_path: Path) -> None:
    directory = start_directory(Settings(data_dir=tmp_path), 3)
    polls: list[list[str]] = []

    async def sleep(_: float) -> None:
        # What this worker saw while it waited; the other two come warm during its polls.
        polls.append(sorted(p.name for p in directory.glob("warm-*")))
        if len(polls) == 2:
            (directory / "warm-1").touch()
        if len(polls) == 4:
            (directory / "warm-2").touch()

    await wait_for_each_other(directory, sleep)

    mine = f"warm-{os.getpid()}"
    assert polls[0] == [mine]
    assert len(polls) == 4  # it went on at the first look that found all three
    assert sorted(p.name for p in directory.glob("warm-*")) == sorted([mine, "warm-1", "warm-2"])


async def test_the_last_worker_to_warm_up_does_not_wait(tmp_path: Path) -> None:
    directory = start_directory(Settings(data_dir=tmp_path), 2)
    (directory / "warm-1").touch()

    async def sleep(_: float) -> None:
        raise AssertionError("the last worker waited")

    await wait_for_each_other(directory, sleep)


def test_the_workers_are_told_where_to_wait(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, api_port=8080)
    env = worker_environment(settings, tmp_path / "metrics", tmp_path / "api-start")

    assert env["MEMSTREAM_API_START_TOGETHER"] == str(tmp_path / "api-start")
    assert env["MEMSTREAM_API_WORKERS"] == "1"
    assert env["MEMSTREAM_API_REUSE_PORT"] == "true"
