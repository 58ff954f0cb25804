"""The offline backend implements `LanguageModel` with the domain's text rules."""

from datetime import UTC, datetime, timedelta

import pytest

from memstream.adapters.llm.offline import OfflineLanguageModel
from memstream.domain.models import Level, MemoryNode, SourceMessage, Turn, Window
from memstream.domain.query import parse_query
from memstream.domain.query_heuristics import gate_candidates, plan_query
from memstream.domain.segment_text import render_segment
from memstream.domain.summary_text import consolidate_summary
from memstream.ports import LanguageModel

MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
TURN = Turn("e0", "u1", "s1", 0, "Caroline", "user", "I painted a lake at dawn.", MAY_8)
LEAVES = [
    MemoryNode(
        f"n{i}",
        "u1",
        Level.SEGMENT,
        MAY_8 + timedelta(minutes=i),
        MAY_8 + timedelta(minutes=i + 1),
        f'8 May 2023, Caroline: "I painted {thing}."',
        source_ids=(f"e{i}",),
        messages=(SourceMessage(f"e{i}", "Caroline", "user", f"I painted {thing}.", MAY_8),),
    )
    for i, thing in enumerate(["a lake at dawn", "a pottery bowl", "the lake again"])
]
SESSION = Window("u1", Level.SESSION, MAY_8, MAY_8 + timedelta(hours=1), "s1")
llm: LanguageModel = OfflineLanguageModel()


async def test_segment_is_the_domain_rendering_and_never_degraded() -> None:
    summary = await llm.write_segment([TURN], LEAVES)
    assert (
        summary.text
        == render_segment([TURN])
        == '8 May 2023, Caroline: "I painted a lake at dawn."'
    )
    assert not summary.degraded


async def test_a_segment_needs_a_message() -> None:
    with pytest.raises(ValueError, match="at least one message"):
        await llm.write_segment([], [])


async def test_consolidation_is_the_domain_summary() -> None:
    summary = await llm.consolidate(Level.SESSION, SESSION, LEAVES, [])
    assert summary.text == consolidate_summary(Level.SESSION, SESSION, LEAVES, []).text
    assert summary.text.startswith('Session on 8 May 2023 (Mon): Caroline: "I painted')
    # "I painted the lake again." has too few content words to be a fact.
    assert {s for f in summary.facts for s in f.source_ids} == {"e0", "e1"}
    assert not summary.degraded


async def test_segments_are_not_consolidated() -> None:
    with pytest.raises(ValueError, match="L1"):
        await llm.consolidate(Level.SEGMENT, SESSION, LEAVES, [])


async def test_plan_and_gate_are_the_domain_heuristics() -> None:
    query = parse_query("When did Caroline paint the lake?")
    assert await llm.plan(query) == plan_query(query)
    assert (await llm.plan(query)).complexity == "hybrid"
    kept = await llm.gate(query, "simple", LEAVES)
    assert kept == gate_candidates(query, "simple", LEAVES) == ["n0", "n2"]
