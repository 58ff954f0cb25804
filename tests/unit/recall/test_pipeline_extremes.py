"""The whole recall pipeline on any query text and any aware query time (issue 15): it
answers, within the token budget, or the API's validation refused the input first."""

from __future__ import annotations

import asyncio
from datetime import datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.domain.test_extreme_times import PHRASES, instants
from tests.unit.recall.test_pipeline import build

from memstream.recall.pipeline import RecallRequest

# Any text the API lets through: no lone surrogates (refused with a 422 before recall).
texts = st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=200)
queries = st.one_of(
    texts,
    st.tuples(texts, st.sampled_from(PHRASES)).map(" ".join),
    st.sampled_from(PHRASES).map(lambda p: f"What did Caroline do {p}?"),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    query=queries,
    query_time=instants,
    complexity=st.sampled_from(["simple", "hybrid", "complex"]),
    max_tokens=st.integers(min_value=1, max_value=16_000),
)
def test_recall_answers_any_query_at_any_time(
    query: str, query_time: datetime, complexity: str, max_tokens: int
) -> None:
    pipeline, _, _ = build()
    request = RecallRequest(
        "u1",
        query,
        query_time=query_time,
        complexity=complexity,
        max_tokens=max_tokens,  # type: ignore[arg-type]
    )
    result = asyncio.run(pipeline.recall(request))
    assert result.tokens <= max_tokens
    levels = [int(m.node.level) for m in result.memories]
    assert levels == sorted(levels)
