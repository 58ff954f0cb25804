"""Monthly profiles state what is true now, through the real broker, workers, Redis and Qdrant.

Maya says she lives in Porto in January and, in April, that they moved to Berlin "last
month". The April profile opens with the change and what holds at its end, citing the
messages; the January profile says Porto (it is built only from what was said by its end).
Forgetting the Berlin message consolidates April again: Porto holds, Berlin is gone; then
forgetting the Porto message (January's) rewrites April's profile too, which stated it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

import pytest
from tests.integration.test_knowledge_write import APR, JAN, USER, conversation, publish, written

from memstream.bootstrap import Container, connect
from memstream.contracts.codec import encode_forget
from memstream.domain.calendar import window_for
from memstream.domain.ids import window_node_id
from memstream.domain.models import Level, MemoryNode
from memstream.domain.profile_facts import CHANGED, NOW
from memstream.entrypoints.runner import WRITE_PATH, RunningProcess, run_parts
from memstream.settings import Settings


@pytest.fixture
async def runtime(settings: Settings, tmp_path: Path) -> AsyncIterator[Container]:
    local = settings.model_copy(
        update={"data_dir": tmp_path, "clock_grace_s": 0.0, "clock_interval_s": 0.5}
    )
    async with connect(local, prioritise_online=True) as rt:
        yield rt


@pytest.fixture
async def pipeline(runtime: Container) -> AsyncIterator[RunningProcess]:
    async with run_parts(runtime, WRITE_PATH, fast_rebalance=True) as running:
        yield running


async def profile(runtime: Container, month_of: datetime) -> MemoryNode:
    start, _ = window_for(Level.MONTH, month_of, "UTC")
    node_id = window_node_id(USER, Level.MONTH, start)
    stored = await runtime.tree.get(USER, node_id)
    assert stored is not None
    return stored.node


async def test_a_profile_states_the_facts_of_its_month_end_and_the_change(
    runtime: Container, pipeline: RunningProcess, tmp_path: Path
) -> None:
    await publish(runtime, written(tmp_path / "conversation.jsonl", conversation()))
    april = await profile(runtime, APR)
    lines = april.text.split("\n")
    assert lines[1] == f"- {CHANGED} Maya moved from Porto to Berlin (1 March 2024)"
    assert f"- {NOW} Maya lives in Berlin (since 1 March 2024)" in lines
    assert any(line.startswith(f"- {NOW} Maya's brother lives in Madrid") for line in lines)
    [change] = [f for f in april.facts if f.text.startswith(CHANGED)]
    assert change.source_ids == ("porto", "berlin")
    january = await profile(runtime, JAN)
    assert f"- {NOW} Maya lives in Porto (since 10 January 2024)" in january.text.split("\n")
    assert "Berlin" not in january.text

    await publish(runtime, written(tmp_path / "forget.jsonl", [encode_forget(USER, ["berlin"])]))
    april = await profile(runtime, APR)
    assert "Berlin" not in april.text
    assert f"- {NOW} Maya lives in Porto (since 10 January 2024)" in april.text.split("\n")
    assert all("berlin" not in f.source_ids for f in april.facts)

    # January's message forgotten: April's children are the same, but its profile stated
    # the fact as holding, so it is written again without it.
    await publish(runtime, written(tmp_path / "forget-jan.jsonl", [encode_forget(USER, ["porto"])]))
    april = await profile(runtime, APR)
    assert "Porto" not in april.text
    assert all("porto" not in f.source_ids for f in april.facts)
