"""When a stated fact began: durations count back, named months and years are where it began."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.domain.fact_time import began_at

SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


@pytest.mark.parametrize(
    ("clause", "expected"),
    [
        ("we moved here three years ago", datetime(2020, 5, 8, 13, 56, tzinfo=UTC)),
        ("I've been vegetarian for two years", datetime(2021, 5, 8, 13, 56, tzinfo=UTC)),
        ("for the past 6 months", datetime(2022, 11, 8, 13, 56, tzinfo=UTC)),
        ("a couple of weeks ago", SAID - timedelta(weeks=2)),
        ("since last May", datetime(2022, 5, 1, tzinfo=UTC)),
        ("I graduated last April", datetime(2023, 4, 1, tzinfo=UTC)),
        ("we moved there last May", datetime(2022, 5, 1, tzinfo=UTC)),
        ("since March", datetime(2023, 3, 1, tzinfo=UTC)),
        ("since September", datetime(2022, 9, 1, tzinfo=UTC)),
        ("since 2019", datetime(2019, 1, 1, tzinfo=UTC)),
        # A month named with "in": the latest one begun, unless the clause looks ahead.
        ("I went vegan in January", datetime(2023, 1, 1, tzinfo=UTC)),
        ("we moved in early May", datetime(2023, 5, 1, tzinfo=UTC)),
        ("I married Karim in May", datetime(2023, 5, 1, tzinfo=UTC)),
        ("she got the job, she's moving there in July", SAID),
        ("I start there in March", SAID),
        ("we'll move in July", SAID),
        ("last year", datetime(2022, 1, 1, tzinfo=UTC)),
        ("last month", datetime(2023, 4, 1, tzinfo=UTC)),
        ("last summer", datetime(2022, 6, 1, tzinfo=UTC)),
        ("yesterday", SAID - timedelta(days=1)),
        # Spans as summaries resolve them (`event_time`), from their first day: 8 May 2023
        # is a Monday.
        ("we moved to Montreal last week", datetime(2023, 5, 1, tzinfo=UTC)),
        ("I moved in last weekend", datetime(2023, 5, 6, tzinfo=UTC)),
        ("I started there last Friday", datetime(2023, 5, 5, tzinfo=UTC)),
        ("I moved to Berlin next week", SAID),
        ("I live in Berlin", SAID),
        # A durative opening, and a negated perfect that is the clause's own verb.
        ("Three weeks of bouldering and I'm sore", SAID - timedelta(weeks=3)),
        ("Six months into Japanese", datetime(2022, 11, 8, 13, 56, tzinfo=UTC)),
        ("I haven't eaten meat in about four years", datetime(2019, 5, 8, 13, 56, tzinfo=UTC)),
        ("I moved to Berlin and haven't seen Mum in two years", SAID),
    ],
)
def test_the_words_say_when_it_began(clause: str, expected: datetime) -> None:
    assert began_at(clause, SAID) == expected


def test_a_month_back_from_the_31st_lands_on_the_months_last_day() -> None:
    said = datetime(2023, 3, 31, tzinfo=UTC)
    assert began_at("a month ago", said) == datetime(2023, 2, 28, tzinfo=UTC)


def test_a_future_year_is_not_a_beginning() -> None:
    assert began_at("in 2031", SAID) == SAID


@given(st.text(max_size=80), st.datetimes(min_value=datetime(1990, 1, 1)))
def test_a_fact_never_begins_after_it_was_said(clause: str, naive: datetime) -> None:
    said = naive.replace(tzinfo=UTC)
    assert began_at(clause, said) <= said


def test_a_span_begins_on_the_speakers_own_calendar_day() -> None:
    # 21:00 in Montreal is already the next day in UTC; "last week" counts from the local day.
    montreal = timezone(timedelta(hours=-4))
    said = datetime(2025, 6, 2, 21, 0, tzinfo=montreal)
    assert began_at("We moved to Montreal last week", said) == datetime(
        2025, 5, 26, tzinfo=montreal
    )
