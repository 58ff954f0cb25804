"""Time expressions resolved to intervals (TSM-style), relative ones against the query time."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstream.domain.timeexpr import resolve_time_range

NOW = datetime(2023, 11, 20, 15, 0, tzinfo=UTC)


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What dish did Nate make on 9 November, 2022?", day(2022, 11, 9), day(2022, 11, 10)),
        ("What did he read on 8th December, 2023?", day(2023, 12, 8), day(2023, 12, 9)),
        ("Which movie on October 6, 2022?", day(2022, 10, 6), day(2022, 10, 7)),
        ("Where was the photo from December 1,2023 taken?", day(2023, 12, 1), day(2023, 12, 2)),
        ("What did they give him on Aug 15th?", day(2023, 8, 15), day(2023, 8, 16)),
        ("What event is Nate organizing in June 2022?", day(2022, 6, 1), day(2022, 7, 1)),
        ("What instrument in December 2023?", day(2023, 12, 1), day(2024, 1, 1)),
        ("When did John get injured in 2023?", day(2023, 1, 1), day(2024, 1, 1)),
        ("What deal did John get in December?", day(2022, 12, 1), day(2023, 1, 1)),
        ("What did she photograph last summer?", day(2023, 6, 1), day(2023, 9, 1)),
        ("What did she cook yesterday?", day(2023, 11, 19), day(2023, 11, 20)),
        ("What did she find last week?", day(2023, 11, 13), day(2023, 11, 20)),
        ("What happened last month?", day(2023, 10, 1), day(2023, 11, 1)),
    ],
)
def test_resolves_to_the_named_interval(query: str, start: datetime, end: datetime) -> None:
    found = resolve_time_range(query, NOW)
    assert found is not None
    assert (found.start, found.end) == (start, end)
    assert found.phrase in query


def test_a_missing_year_puts_the_date_in_the_past() -> None:
    found = resolve_time_range("What did they do on 25 December?", NOW)
    assert found is not None and found.start == day(2022, 12, 25)


def test_a_month_asked_in_the_future_tense_is_the_next_to_come() -> None:
    ahead = resolve_time_range("Where will Kofi live in March?", NOW)
    assert ahead is not None and ahead.start == datetime(2024, 3, 1, tzinfo=UTC)
    past = resolve_time_range("Where did Kofi live in March?", NOW)
    assert past is not None and past.start == datetime(2023, 3, 1, tzinfo=UTC)


def test_ago_is_a_window_around_the_point() -> None:
    found = resolve_time_range("Where did she go two months ago?", NOW)
    assert found is not None and found.contains(day(2023, 9, 21))


@pytest.mark.parametrize(
    "query",
    ["What did Caroline research?", "How many dogs does Maria have?", "What is in 42 boxes?"],
)
def test_no_time_expression_gives_none(query: str) -> None:
    assert resolve_time_range(query, NOW) is None


def test_an_impossible_day_falls_back_to_its_month() -> None:
    found = resolve_time_range("What happened on 31 June, 2023?", NOW)
    assert found is not None and (found.start, found.end) == (day(2023, 6, 1), day(2023, 7, 1))


def test_a_naive_query_time_is_utc() -> None:
    found = resolve_time_range("What happened yesterday?", datetime(2023, 1, 2, 9, 0))
    assert found is not None and found.start == day(2023, 1, 1)
