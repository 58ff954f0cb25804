"""The rebuild job: what it covers, how it advances, its stored form."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from datetime import UTC, datetime, timedelta

from memstream.domain.derivation import Derivation
from memstream.domain.models import Level, MemoryNode, RebuildRequested
from memstream.domain.rebuild import RebuildJob, RebuildPlan, needs_rederiving, plan_job
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
    assert job.plan == RebuildPlan(("l0", "l1", "l2"), ("s0", "s1", "w"))
    assert (job.leaf_count, job.window_count, job.done, job.finished) == (3, 3, 0, False)


def test_from_and_levels_narrow_the_job_but_keep_the_ancestors() -> None:
    since = T0 + timedelta(days=1)
    request = RebuildRequested("ana", "r1", since, (Level.SEGMENT,))
    ancestors = [n for n in UPPER if n.id in ("s1", "w")]
    job = plan_job(request, DERIVED, LEAVES, ancestors, UPPER)
    assert job.plan is not None and job.plan.leaves == ("l1", "l2")
    assert job.plan.windows == ("s1", "w")  # the week is asked for by no level, but is above


def test_the_job_advances_chunk_by_chunk_to_finished_and_round_trips() -> None:
    job = plan_job(RebuildRequested("ana", "r1"), DERIVED, LEAVES, UPPER, UPPER)
    job = replace(job, plan=None)  # written beside the job with its first commit
    job = job.advanced(2, 1)
    assert (job.done, job.finished) == (2, False)
    job = job.advanced(5, 1)
    assert (job.done, job.rewritten, job.finished) == (3, 2, True)
    assert RebuildJob.from_json(job.to_json()) == job
    dated = replace(job, since=T0, derivation=None)
    assert RebuildJob.from_json(dated.to_json()) == dated


def test_the_stored_job_is_a_few_counters_whatever_it_covers() -> None:
    many = [node(f"l{i:05}", 1, i % 300, "s0") for i in range(5000)]
    job = plan_job(RebuildRequested("ana", "r1"), DERIVED, many, UPPER, UPPER)
    assert job.leaf_count == 5000 and len(json.dumps(job.to_json())) < 512


def test_a_job_stored_whole_before_plans_were_kept_apart_is_read_with_its_plan() -> None:
    job = plan_job(RebuildRequested("ana", "r1"), DERIVED, LEAVES, UPPER, UPPER)
    assert job.plan is not None
    whole = {**job.to_json(), "leaves": list(job.plan.leaves), "windows": list(job.plan.windows)}
    del whole["leaf_count"], whole["window_count"]
    assert RebuildJob.from_json(whole) == job  # its next commit writes the plan apart


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
