"""The fairness benchmark says which quiet L1s a phase that timed out still waits for, and
where each missing turn is; a quiet turn the broker refused stops the phase as such."""

from __future__ import annotations

import argparse
import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest
from tests.unit.fakes import FakeTree, leaf

from memstream.domain.ids import segment_id
from memstream_lab.bench import fairness
from memstream_lab.bench.fairness import Phase


async def test_a_phase_that_timed_out_names_each_turn_missing_and_the_l1_holding_it() -> None:
    merged = leaf("u1-both", "first", "second", at=datetime(2025, 1, 1, tzinfo=UTC))
    phase = Phase(cast(Any, None), cast(Any, FakeTree([merged])), "flood")
    for event_id in ("u1-both-m0", "u1-lost"):
        node = segment_id("u1", [event_id])
        phase.published["u1", node] = 0.0
        phase.events["u1", node] = event_id

    async def logged(wanted: set[tuple[str, str]]) -> dict[tuple[str, str], tuple[int, int]]:
        return {("u1", "u1-lost"): (3, 1207)} if ("u1", "u1-lost") in wanted else {}

    async def ledger(user: str) -> list[tuple[int, int]]:
        return [(3, 1207)]

    phase.logged = logged  # type: ignore[method-assign]
    phase.ledger = ledger  # type: ignore[method-assign]
    said = await phase.missing()
    assert said.startswith("2 quiet L1s never written")
    assert "u1 u1-both-m0 (" in said and "): in u1-both, not in the turns log" in said
    assert "u1 u1-lost (" in said and "): in no L1, turns log 3:1207" in said
    assert "overflow ledger [(3, 1207)]" in said


async def test_a_quiet_turn_the_broker_refused_stops_the_phase_as_a_failed_publish() -> None:
    phase = Phase(cast(Any, None), cast(Any, FakeTree([])), "flood")
    phase.published["u1", segment_id("u1", ["q0"])] = 0.0

    async def refused() -> None:
        raise ConnectionError("the broker refused the send")

    publishing = asyncio.create_task(refused())
    with pytest.raises(RuntimeError, match="not published") as stopped:
        await asyncio.wait_for(phase.watch_quiet(publishing), timeout=10)
    assert isinstance(stopped.value.__cause__, ConnectionError)


def test_the_capacity_is_the_median_backlog_not_a_burst() -> None:
    each = [{"turns_per_s": 330.0}, {"turns_per_s": 788.0}, {"turns_per_s": 317.0}]
    found = fairness.median_backlog(each)
    assert found["turns_per_s"] == 330.0
    assert found["backlogs"] == each


def _phase(freshness_p99: float, recall_p95: float) -> dict[str, Any]:
    return {
        "quiet_l1_freshness_ms": {"p50": freshness_p99 / 2, "p99": freshness_p99},
        "quiet_recall_ms": {"p95": recall_p95, "count": 100},
    }


def test_a_flood_phase_is_read_against_the_alone_phases_on_either_side() -> None:
    rounds = [
        {"alone": _phase(100.0, 20.0), "flood": _phase(150.0, 30.0)},
        {"alone": _phase(200.0, 40.0), "flood": _phase(300.0, 45.0)},
    ]
    fairness.bracket(rounds, closing_alone=_phase(400.0, 50.0))
    assert rounds[0]["ratios_bracketed"] == {
        "l1_freshness_p50": 1.0,
        "l1_freshness_p99": 1.0,
        "recall_p95": 1.0,
    }
    assert rounds[1]["ratios_bracketed"]["l1_freshness_p99"] == 1.0  # (200 + 400) / 2
    assert rounds[1]["ratios_bracketed"]["recall_p95"] == 1.0


def test_a_quantile_missing_beside_the_flood_gives_no_bracketed_ratio() -> None:
    empty = {"quiet_l1_freshness_ms": {}, "quiet_recall_ms": {"count": 0}}
    rounds = [{"alone": _phase(100.0, 20.0), "flood": empty}]
    fairness.bracket(rounds, closing_alone=_phase(100.0, 20.0))
    assert set(rounds[0]["ratios_bracketed"].values()) == {None}


def test_cores_busy_names_this_process_the_bench() -> None:
    span = fairness.cpu.CpuSpan({"event_loop": 5.0, "broker": 10.0, "stack": 20.0})
    assert fairness.cores_busy(span, 10.0) == {"bench": 0.5, "broker": 1.0, "stack": 2.0}


def test_cores_busy_counts_the_flood_process_by_what_it_said() -> None:
    span = fairness.cpu.CpuSpan({"event_loop": 5.0, "stack": 20.0})
    found = fairness.cores_busy(span, 10.0, flood_cpu_seconds=3.0)
    assert found == {"bench": 0.5, "flood": 0.3, "stack": 2.0}


def test_a_baseline_runs_right_before_each_stack_with_a_share() -> None:
    args = argparse.Namespace(
        stacks=["share_off", "share_on", "tenant_topics", "tenant_topics"],
        baseline=Path("/before"),
    )
    assert [(label, code) for label, _, code in fairness._stacks(args)] == [
        ("share_off", None),
        ("share_on_baseline", Path("/before")),
        ("share_on", None),
        ("tenant_topics_baseline", Path("/before")),
        ("tenant_topics", None),
        ("tenant_topics_baseline_2", Path("/before")),
        ("tenant_topics_2", None),
    ]
