"""`memstream rebuild`: levels parsing, one command per user, following until done."""

from __future__ import annotations

import json
from datetime import date

import pytest
import typer
from tests.unit.fakes import FakePublisher, FakeTree, sample_tree

from memstream.contracts.catalog import load_catalog
from memstream.domain.models import Level
from memstream.domain.rebuild import RebuildJob
from memstream.entrypoints.rebuild_command import (
    follow,
    parse_levels,
    request_rebuilds,
    work_done,
)
from memstream.recall.rebuilds import RebuildProgress


@pytest.mark.parametrize(
    ("text", "levels"),
    [("L1..L5", [1, 2, 3, 4, 5]), ("L2-L5", [2, 3, 4, 5]), ("1,3", [1, 3]), ("l4", [4])],
)
def test_levels_are_read_as_written(text: str, levels: list[int]) -> None:
    assert parse_levels(text) == levels


@pytest.mark.parametrize("text", ["L0", "L6", "L5..L1", "L1..L2..L3", "one"])
def test_bad_levels_are_refused(text: str) -> None:
    with pytest.raises(typer.BadParameter):
        parse_levels(text)


async def test_one_command_per_user_then_followed_until_every_rebuild_is_done() -> None:
    publisher, tree = FakePublisher(), FakeTree([*sample_tree("ana"), *sample_tree("bo")])
    requested = await request_rebuilds(publisher, "turns", ["ana", "bo"], date(2024, 1, 2), [1])
    assert [(e.key, e.value["user_id"], e.value["levels"]) for e in publisher.sent] == [
        ("ana", "ana", [1]),
        ("bo", "bo", [1]),
    ]
    assert all(load_catalog().validate("memstream.turns.v1", e.value) == [] for e in publisher.sent)

    seen: list[tuple[int, int]] = []

    def on_progress(states: list[RebuildProgress]) -> None:
        seen.append(work_done(states))
        if len(seen) == 2:  # the workers finish both meanwhile
            for r in requested:
                job = RebuildJob(r.rebuild_id, None, None, tuple(Level), 1, 0, 1, 1, True)
                tree.rebuild_jobs[r.user_id] = json.dumps(job.to_json())

    states = await follow(tree, requested, on_progress, poll_s=0.01, timeout_s=10)
    assert [s.status for s in states] == ["done", "done"]
    assert seen[0] == (0, 0) and seen[-1] == (2, 2)


async def test_following_a_rebuild_of_a_user_without_memories_ends_at_once() -> None:
    tree = FakeTree(sample_tree("ana"))
    requested = await request_rebuilds(FakePublisher(), "turns", ["nobody"], None, None)
    states = await follow(tree, requested, lambda _: None, poll_s=0.01, timeout_s=1)
    assert [s.status for s in states] == ["nothing_to_do"]
