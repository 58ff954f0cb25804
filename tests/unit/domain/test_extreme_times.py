"""Recall's time arithmetic at the ends of the calendar: any aware query time and any memory
time are ranked and resolved without raising (issue 15: three of them used to be 500s)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.unit.fakes import node

from memstream.domain.models import Level
from memstream.domain.query import parse_query
from memstream.domain.ranking import RecalledMemory, Support, order, prune
from memstream.domain.recall_options import RecallOptions
from memstream.domain.rerank import rerank
from memstream.domain.timeexpr import resolve_time_range

LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-14)))
EARLIEST = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14)))
PHRASES = (
    "yesterday",
    "last year",
    "this year",
    "last week",
    "last weekend",
    "this month",
    "last month",
    "three months ago",
    "6 years ago",
    "last winter",
    "summer",
    "in December",
    "in January",
    "on 31 December",
    "on January 1st",
    "in 2023",
    "May 2022",
)

# Offsets as RFC 3339 can carry them (up to +-23:59), on any wall time of years 1-9999.
offsets = st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
instants = st.builds(
    lambda wall, tz: wall.replace(tzinfo=tz), st.datetimes(), offsets
) | st.sampled_from([LATEST, EARLIEST, datetime.max.replace(tzinfo=UTC)])
queries = st.one_of(
    st.sampled_from(PHRASES).map(lambda p: f"what happened {p}?"),
    st.lists(st.sampled_from(PHRASES), max_size=3).map(" and ".join),
    st.text(max_size=40),
)


def memories(times: list[datetime]) -> list[RecalledMemory]:
    return [
        RecalledMemory(node("u", f"n{i}", Level.SEGMENT, t, t, None, f"Caroline said {i}"), 0.5)
        for i, t in enumerate(times)
    ]


@pytest.mark.parametrize(
    ("query", "now"),
    [
        ("what did we do?", LATEST),
        ("what did we do yesterday?", datetime(9999, 12, 31, 12, tzinfo=UTC)),
        ("what changed last year?", datetime(1, 6, 1, tzinfo=UTC)),
        ("what happened yesterday?", datetime(1, 1, 1, 5, tzinfo=UTC)),
        ("what about next week, i.e. last week?", datetime(1, 1, 2, tzinfo=UTC)),
    ],
)
def test_the_reported_query_times_rank_without_raising(query: str, now: datetime) -> None:
    pool = memories([datetime(2024, 3, 4, tzinfo=UTC), now])
    reranked = rerank(parse_query(query, now), pool, RecallOptions(time_boost=0.1))
    assert {m.node.id for m in order(reranked, now)} == {"n0", "n1"}


def test_a_phrase_outside_the_calendar_constrains_nothing() -> None:
    assert resolve_time_range("last year", datetime(1, 6, 1, tzinfo=UTC)) is None
    assert resolve_time_range("yesterday", datetime(1, 1, 1, 5, tzinfo=UTC)) is None
    # Inside the calendar the phrases still resolve.
    found = resolve_time_range("yesterday", datetime(9999, 12, 31, 12, tzinfo=UTC))
    assert found is not None and found.start == datetime(9999, 12, 30, tzinfo=UTC)


def test_order_compares_instants_whose_utc_is_outside_the_calendar() -> None:
    late, early = memories([LATEST, EARLIEST])
    # Closest to the query time first, the offsets taken into account.
    assert [m.node.id for m in order([early, late], LATEST)] == ["n0", "n1"]
    assert [m.node.id for m in order([late, early], EARLIEST)] == ["n1", "n0"]


@given(query=queries, now=instants, times=st.lists(instants, min_size=1, max_size=5))
def test_recall_ranking_takes_any_query_time_and_any_memory_time(
    query: str, now: datetime, times: list[datetime]
) -> None:
    resolve_time_range(query, now)
    pool = memories(times)
    reranked = rerank(
        parse_query(query, now), pool, RecallOptions(time_boost=0.1, speaker_boost=0.1)
    )
    support = {m.node.id: Support.of_leaf(m.score) for m in reranked}
    kept = prune([m.node for m in reranked], support, budget=3, scoring="max")
    assert len(order(kept, now)) == min(3, len(pool))
