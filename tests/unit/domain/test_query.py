"""The query parsed once: what each recall stage reads from it."""

from __future__ import annotations

import re
from datetime import UTC, datetime

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
