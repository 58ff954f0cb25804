"""Who a query is about, and whether it gathers facts from across the history."""

from __future__ import annotations

import pytest

from memstream.domain.cues import asks_when, is_aggregative
from memstream.domain.query import parse_query


def test_named_people_matches_whole_first_names() -> None:
    people = ["Caroline", "Melanie", "Mel Brooks"]
    assert parse_query("What did Caroline research?").people_named(people) == ["Caroline"]
    assert parse_query("Did Melanie and Caroline meet?").people_named(people) == [
        "Caroline",
        "Melanie",
    ]
    assert parse_query("What did Mel paint?").people_named(people) == ["Mel Brooks"]
    assert parse_query("What did Carolines do?").people_named(people) == []
    assert parse_query("What did caroline do?").people_named(people) == []  # names as written


@pytest.mark.parametrize(
    "query",
    [
        "What activities does Melanie partake in?",
        "What kinds of art does Caroline make?",
        "What are Joanna's hobbies?",
        "Where has Melanie camped?",
        "How many tournaments has Nate won?",
        "What subject have Caroline and Melanie both painted?",
        "In what ways is Caroline participating?",
        "What video games does Nate play?",
        "Which European countries has Maria been to?",
        "What musical artists/bands has Melanie seen?",
    ],
)
def test_aggregative_questions(query: str) -> None:
    assert is_aggregative(query)


@pytest.mark.parametrize(
    "query",
    [
        "What did Caroline research?",
        "When did Melanie paint a sunrise?",
        "What is Caroline's identity?",
        "What was discussed in the workshop?",
        "Which city did John recommend?",
        "What dance class does Ann take?",
        "What did his parents say?",
    ],
)
def test_one_fact_questions(query: str) -> None:
    assert not is_aggregative(query)


@pytest.mark.parametrize(
    "query",
    [
        "When did Caroline go to the LGBTQ support group?",
        "How long ago was Caroline's 18th birthday?",
        "What year did John start surfing?",
        "In which month did Gina open her store?",
    ],
)
def test_questions_asking_for_a_time(query: str) -> None:
    assert asks_when(query)


@pytest.mark.parametrize(
    "query",
    ["What did Caroline research?", "How long has Melanie been painting?", "Whenever is fine"],
)
def test_questions_not_asking_for_a_time(query: str) -> None:
    assert not asks_when(query)
