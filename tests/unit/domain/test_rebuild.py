"""The rebuild job: what it covers, how it advances, its stored form."""

from __future__ import annotations

from dataclasses import asdict, replace
from datetime import UTC, datetime, timedelta

from memstream.domain.derivation import Derivation
from memstream.domain.models import Level, MemoryNode, RebuildRequested
from memstream.domain.rebuild import RebuildJob, needs_rederiving, plan_job
from memstream.domain.windows import late_data_closures

T0 = datetime(2024, 5, 6, tzinfo=UTC)
DERIVED = Derivation("offline", "rules", "1", "hashing:8")


def node(node_id: str, level: int, day: int, parent: str | None = None) -> MemoryNode:
    at = T0 + timedelta(days=day)
    return MemoryNode(node_id, "ana", Level(level), at, at + timedelta(hours=1), node_id, parent)


LEAVES = [node("l1", 1, 1, "s1"), node("l0", 1, 0, "s0"), node("l2", 1, 2, "s1")]
UPPER = [node("s0", 2, 0, "w"), node("s1", 2, 1, "w"), node("w", 4, 0)]


def test_the_job_takes_leaves_oldest_first_and_their_windows_bottom_up() -> None:
    job = plan_job(RebuildRequested("ana", "r1"), DERIVED, LEAVES, UPPER, UPPER)
    assert job.leaves == ("l0", "l1", "l2")
    assert job.windows == ("s0", "s1", "w")
    assert (job.done, job.finished) == (0, False)


def test_from_and_levels_narrow_the_job_but_keep_the_ancestors() -> None:
    since = T0 + timedelta(days=1)
    request = RebuildRequested("ana", "r1", since, (Level.SEGMENT,))
    ancestors = [n for n in UPPER if n.id in ("s1", "w")]
    job = plan_job(request, DERIVED, LEAVES, ancestors, UPPER)
    assert job.leaves == ("l1", "l2")
    assert job.windows == ("s1", "w")  # the week is asked for by no level, but is above


def test_the_job_advances_chunk_by_chunk_to_finished_and_round_trips() -> None:
    job = plan_job(RebuildRequested("ana", "r1"), DERIVED, LEAVES, UPPER, UPPER)
    assert job.next_chunk(2) == ("l0", "l1")
    job = job.advanced(2, 1)
    assert (job.next_chunk(2), job.finished) == (("l2",), False)
    job = job.advanced(5, 1)
    assert (job.done, job.rewritten, job.finished) == (3, 2, True)
    assert RebuildJob.from_json(job.to_json()) == job
    dated = replace(job, since=T0, derivation=None)
    assert RebuildJob.from_json(dated.to_json()) == dated


def test_a_node_needs_rederiving_unless_derived_the_current_way() -> None:
    leaf = node("l0", 1, 0)
    assert needs_rederiving(leaf, DERIVED)  # written before derivations were kept
    assert not needs_rederiving(replace(leaf, derivation=DERIVED), DERIVED)
    assert needs_rederiving(replace(leaf, derivation=DERIVED), replace(DERIVED, prompt_version="2"))


def test_closures_are_late_data_bottom_up_and_never_for_leaves() -> None:
    found = late_data_closures([UPPER[2], LEAVES[0], UPPER[1], UPPER[0]])
    assert [c.node_id for c in found] == ["s0", "s1", "w"]
    assert {c.reason for c in found} == {"late_data"}
    assert found[0].window.start == UPPER[0].t_start and found[0].parent_id == "w"


def test_a_derivation_round_trips_through_json_with_every_field() -> None:
    derivation = Derivation("openai", "gpt-x", "7", "local:all-MiniLM-L6-v2:onnx-int8:384")
    assert derivation.to_json() == asdict(derivation)  # a field added must be written too
    assert Derivation.from_json(derivation.to_json()) == derivation
