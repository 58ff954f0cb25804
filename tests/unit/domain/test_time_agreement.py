"""One reading of relative time: what a summary dates, a query names as the same range."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from memstream.domain.event_time import resolve_relative_times
from memstream.domain.timeexpr import resolve_time_range

_COUNTS = ["a", "an", "one", "two", "three", "six", "seven", "eight", "ten", "a couple of", "3"]
_UNITS = ["day", "days", "week", "weeks", "weekend", "weekends", "month", "months", "years"]
_WEEKDAYS = ["Monday", "tuesday", "Tues", "thu", "Fri", "Sat", "Sun", "Wed", "Mon"]
_PHRASES = st.one_of(
    st.sampled_from(["yesterday", "last night", "tomorrow"]),
    st.builds("{} {} ago".format, st.sampled_from(_COUNTS), st.sampled_from(_UNITS)),
    st.builds("last {}".format, st.sampled_from(_WEEKDAYS)),
    st.builds(
        "{} {}".format,
        st.sampled_from(["last", "this past", "this last", "past", "this", "next"]),
        st.sampled_from(["week", "weekend"]),
    ),
    st.builds(
        "{} {}".format,
        st.sampled_from(["last", "this", "next", "Last"]),
        st.sampled_from(["month", "year", "spring", "summer", "autumn", "fall", "winter"]),
    ),
)
_SENTENCES = st.sampled_from(["What did Ann do {}?", "{} Ann moved.", "Where was Ben {}"])


@given(
    phrase=_PHRASES,
    sentence=_SENTENCES,
    said=st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2100, 12, 31)),
)
def test_a_query_names_the_range_a_summary_dates(
    phrase: str, sentence: str, said: datetime
) -> None:
    text = sentence.format(phrase)
    [dated] = resolve_relative_times(text, said)
    assert dated.phrase == phrase
    assert dated.span is not None
    assert resolve_time_range(text, said.replace(tzinfo=UTC)) == dated.span


def test_eight_months_ago_is_read_in_a_query_as_in_a_summary() -> None:
    said = datetime(2023, 11, 20, tzinfo=UTC)
    [dated] = resolve_relative_times("I moved eight months ago.", said)
    assert dated.resolved == "March 2023"
    found = resolve_time_range("Where did she move eight months ago?", said)
    assert found is not None
    assert (found.start, found.end) == (
        datetime(2023, 3, 1, tzinfo=UTC),
        datetime(2023, 4, 1, tzinfo=UTC),
    )
