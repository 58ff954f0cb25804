"""The knowledge-read benchmark: bad flags are refused, and a small run against the local
Redis reports the three readers and that the stepped one read alike."""

from __future__ import annotations

import asyncio

import pytest

from memstream_lab.bench.knowledge_read import main, measure

REDIS = "redis://127.0.0.1:6379/0"


@pytest.mark.parametrize("flags", [["--rounds", "0"], ["--messages", "50"]])
def test_bad_flags_are_refused_with_a_message(
    flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(flags)
    assert exit_.value.code == 2
    assert (
        "--rounds must be at least 1 and every --messages at least 100" in capsys.readouterr().err
    )


def test_a_small_run_times_every_reader_and_steps_alike() -> None:
    [size] = asyncio.run(measure([300], rounds=2, redis_url=REDIS))["sizes"]
    assert size["stepped_equals_whole"] is True
    assert size["l1s"] > 100 and size["l1s_with_facts"] > 0
    for reader in ("whole_before", "whole", "stepped"):
        assert size[f"{reader}_cpu_ms"] > 0


def test_a_run_with_endings_reads_them_and_steps_alike() -> None:
    sizes = asyncio.run(measure([300], rounds=2, redis_url=REDIS, endings=[0, 3]))["sizes"]
    assert [(s["endings"], s["steps_state_a_home"]) for s in sizes] == [(0, True), (3, True)]
    assert all(s["stepped_equals_whole"] is True for s in sizes)
    # The endings are facts of their own L1s, so more L1s hold facts.
    assert sizes[1]["l1s_with_facts"] > sizes[0]["l1s_with_facts"]
