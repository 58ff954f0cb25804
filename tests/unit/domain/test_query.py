"""The query parsed once: what each recall stage reads from it."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.domain.lexical import tokenize
from memstream.domain.query import parse_query

NOW = datetime(2023, 6, 9, 12, 0, tzinfo=UTC)


def test_a_query_is_read_into_every_cue_a_stage_needs() -> None:
    query = parse_query("When did Caroline and Melanie go hiking in May 2023?", NOW)
    assert query.terms == tuple(tokenize(query.text))
    assert query.terms == ("carolin", "melani", "go", "hike", "may", "2023")
    assert query.keywords == ("Caroline", "Melanie", "go", "hiking", "May", "2023")
    assert query.complexity == "hybrid"
    assert query.asks_when and not query.aggregative
    assert query.time_range is not None
    assert query.time_range.start == datetime(2023, 5, 1, tzinfo=UTC)
    assert query.terms_without(["Caroline", "Melanie Smith"]) == {"go", "hike", "may", "2023"}


def test_a_query_that_gathers_facts_and_names_no_time() -> None:
    query = parse_query("What activities does Melanie partake in?", NOW)
    assert query.aggregative and not query.asks_when and query.time_range is None


_NAME = st.from_regex(r"[A-Z][a-z]{1,8}", fullmatch=True)


@given(
    names=st.lists(_NAME, min_size=1, max_size=4),
    words=st.lists(st.sampled_from(["did", "say", "to", "'s", "and", "?", ",", "-", "x"])),
    order=st.randoms(use_true_random=False),
)
def test_people_named_finds_what_a_whole_word_search_finds(
    names: list[str], words: list[str], order: object
) -> None:
    pieces = names[1:] + words
    order.shuffle(pieces)  # type: ignore[attr-defined]
    text = " ".join(pieces).replace(" '", "'")
    query = parse_query(text, NOW)
    expected = [n for n in dict.fromkeys(names) if re.search(rf"\b{re.escape(n)}\b", text)]
    assert query.people_named(names) == expected


@pytest.mark.parametrize(
    ("text", "state"),
    [
        # Words that set a question now, whatever its verb.
        ("Where does Maya live these days?", "now"),
        ("Who is Lucia dating now?", "now"),
        ("Is Ellie still on a diet?", "now"),
        ("What is Hannah's main hobby at the moment?", "now"),
        ("Does Olga eat meat anymore?", "now"),
        ("What do people wear nowadays?", "now"),
        ("Did he currently hold the lease?", "now"),
        # A present-tense question about an attribute.
        ("Where does Maya live?", "now"),
        ("What does she do for work?", "now"),
        ("Which band is Liam in?", "now"),
        ("Is Nadia engaged or married?", "now"),
        # A question word's "is", as chat writes it.
        ("What's Rosa's job?", "now"),
        ("Who's Karim?", "now"),
        ("Where\u2019s Maya living?", "now"),
        # What a change replaced.
        ("Which city did Maya live in before Berlin?", "before"),
        ("What did Sofia drive before her current car?", "before"),
        ("Where did she work, back when she used to commute?", "before"),
        ("What was his previous job?", "before"),
        # A time the question names.
        ("Where was Maya living in June 2023?", "then"),
        ("What was Tom eating in the summer of 2022?", "then"),
        ("What did she adopt two weeks before August 11, 2023?", "then"),
        # No state: a past event, a time, a plan, a history.
        ("Where did Maya live?", None),
        ("When is Caroline's birthday?", None),
        ("What is Melanie going to paint next?", None),
        ("Where has Melanie camped?", None),
        ("What did Caroline research?", None),
        ("Why did they argue?", None),
        ("Who's been to Lisbon?", None),
        ("When's Caroline's birthday?", None),
    ],
)
def test_a_query_says_which_state_of_a_changing_fact_it_asks_for(
    text: str, state: str | None
) -> None:
    assert parse_query(text, NOW).state == state


def test_now_means_the_query_time_and_not_a_time_the_question_names() -> None:
    # "now and then" is a frequency, not the present.
    assert parse_query("Do they meet now and then", NOW).state == "now"  # present tense
    assert parse_query("Did they meet now and then", NOW).state is None
