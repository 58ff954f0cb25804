"""The fairness benchmark says which quiet L1s a phase that timed out still waits for."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from tests.unit.fakes import FakeTree, leaf

from memstream.domain.ids import segment_id
from memstream_lab.bench.fairness import Phase


async def test_a_phase_that_timed_out_names_each_turn_missing_and_the_l1_holding_it() -> None:
    merged = leaf("u1-both", "first", "second", at=datetime(2025, 1, 1, tzinfo=UTC))
    phase = Phase(cast(Any, None), cast(Any, FakeTree([merged])), "flood")
    for event_id in ("u1-both-m0", "u1-lost"):
        node = segment_id("u1", [event_id])
        phase.published["u1", node] = 0.0
        phase.events["u1", node] = event_id
    said = await phase.missing()
    assert said.startswith("2 quiet L1s never written")
    assert "u1 u1-both-m0 (" in said and "): in u1-both" in said
    assert "u1 u1-lost (" in said and "): in no L1" in said
