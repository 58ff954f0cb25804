"""Relative times in what people said, resolved against when they said it."""

from __future__ import annotations

from datetime import datetime, timedelta
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.domain import event_time
from memstream.domain.event_time import annotation, resolve_relative_times

# A Saturday.
SAID = datetime(2023, 7, 15, 13, 0)


@pytest.mark.parametrize(
    ("text", "phrase", "resolved"),
    [
        ("I went to a support group yesterday.", "yesterday", "14 July 2023"),
        ("We watched a movie last night.", "last night", "14 July 2023"),
        ("The opening is tomorrow!", "tomorrow", "16 July 2023"),
        ("It broke two days ago.", "two days ago", "13 July 2023"),
        ("I moved 3 months ago.", "3 months ago", "April 2023"),
        ("I started surfing five years ago.", "five years ago", "2018"),
        ("Last Fri I took my kids to the museum.", "Last Fri", "the Friday before 15 July 2023"),
        ("I joined a group last Tues.", "last Tues", "the Tuesday before 15 July 2023"),
        ("We met last tuesday.", "last tuesday", "the Tuesday before 15 July 2023"),
        ("I won the tourney last Sat!", "last Sat", "the Saturday before 15 July 2023"),
        ("Last Sunday we baked.", "Last Sunday", "the Sunday before 15 July 2023"),
        ("I dyed my hair last week.", "last week", "the week before 15 July 2023"),
        ("A roadtrip this past weekend!", "this past weekend", "the weekend before 15 July 2023"),
        ("We camped two weekends ago.", "two weekends ago", "2 weekends before 15 July 2023"),
        ("I'm hiking this weekend.", "this weekend", "the weekend of 15 July 2023"),
        ("The show is next month.", "next month", "August 2023"),
        ("I hurt my knee last month.", "last month", "June 2023"),
        ("We went to Pride last year.", "last year", "2022"),
        ("Max and I camped last summer.", "last summer", "summer 2022"),
        ("I'll visit next summer.", "next summer", "summer 2024"),
    ],
)
def test_a_relative_time_resolves_against_when_it_was_said(
    text: str, phrase: str, resolved: str
) -> None:
    [found] = resolve_relative_times(text, SAID)
    assert (found.phrase, found.resolved) == (phrase, resolved)


def test_a_summer_not_over_yet_is_not_the_last_one() -> None:
    autumn = datetime(2023, 10, 2)
    assert resolve_relative_times("last summer", autumn)[0].resolved == "summer 2023"
    assert resolve_relative_times("last summer", SAID)[0].resolved == "summer 2022"


def test_every_expression_is_dated_in_the_order_spoken() -> None:
    text = "I saw them last night and will again tomorrow, like last year."
    assert annotation(text, SAID) == (
        "(last night: 14 July 2023; tomorrow: 16 July 2023; last year: 2022)"
    )


def test_words_that_only_look_relative_are_left_alone() -> None:
    for text in [
        "I read a few days ago.",  # vague: no date to give
        "Last month's rent was high.",  # still resolved: the month is named by the phrase
        "The sunset was lovely.",
        "I'm baking tonight.",  # the day it was said, which every summary prints beside it
        "This monthly meetup is fun.",
        "It was the best seat since I last sat in a theatre.",  # no Saturday
        "The last sun of the evening.",
    ]:
        found = resolve_relative_times(text, SAID)
        assert [t.phrase for t in found] == (["Last month"] if "month's" in text else [])


def test_a_sentence_without_relative_times_has_no_annotation() -> None:
    assert annotation("I work as a nurse in Boston.", SAID) == ""


def test_a_month_back_crosses_the_year() -> None:
    january = datetime(2023, 1, 10)
    assert annotation("I quit last month.", january) == "(last month: December 2022)"


# Words of every expression, words that contain them ("agony", "thistle") and others.
_WORDS = [
    "yesterday", "last", "night", "tomorrow", "ago", "agony", "two", "a", "couple", "of",
    "days", "weeks", "weekend", "months", "years", "this", "thistle", "past", "next", "month",
    "year", "summer", "fall", "winter", "Friday", "Fri", "Sat", "sat", "tues", "week", "I",
    "we", "went", "moved", ",", ".",
]  # fmt: skip


@given(st.lists(st.sampled_from(_WORDS), max_size=25))
def test_skipping_patterns_without_their_trigger_word_changes_nothing(words: list[str]) -> None:
    text = " ".join(words)
    every_pattern = {kind: frozenset({""}) for kind in event_time._TRIGGERS}
    with mock.patch.multiple(event_time, _TRIGGERS=every_pattern, _TRIGGER_WORDS={""}):
        reference = resolve_relative_times(text, SAID)
    assert resolve_relative_times(text, SAID) == reference


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        ("I moved 3 months ago.", datetime(2023, 4, 1), datetime(2023, 4, 30)),
        ("Last Fri I took my kids to the museum.", datetime(2023, 7, 14), datetime(2023, 7, 14)),
        ("I dyed my hair last week.", datetime(2023, 7, 8), datetime(2023, 7, 14)),
        ("A roadtrip this past weekend!", datetime(2023, 7, 8), datetime(2023, 7, 9)),
        ("We camped two weekends ago.", datetime(2023, 7, 1), datetime(2023, 7, 2)),
        ("I'm hiking this weekend.", datetime(2023, 7, 15), datetime(2023, 7, 16)),
        ("Max and I camped last summer.", datetime(2022, 6, 1), datetime(2022, 8, 31)),
        ("It snowed last winter.", datetime(2022, 12, 1), datetime(2023, 2, 28)),
        ("It will snow next winter.", datetime(2023, 12, 1), datetime(2024, 2, 29)),
    ],
)
def test_a_relative_time_names_the_days_its_words_say(
    text: str, first: datetime, last: datetime
) -> None:
    [found] = resolve_relative_times(text, SAID)
    assert found.span is not None
    days = (found.span.end - found.span.start).days
    start = found.span.start.replace(tzinfo=None)
    assert (start, start + timedelta(days=days - 1)) == (first, last)
