"""Who a query is about, and whether it gathers facts from across the history."""

from __future__ import annotations

import pytest

from memstream.domain.cues import is_aggregative, named_people


def test_named_people_matches_whole_first_names() -> None:
    people = ["Caroline", "Melanie", "Mel Brooks"]
    assert named_people("What did Caroline research?", people) == ["Caroline"]
    assert named_people("Did Melanie and Caroline meet?", people) == ["Caroline", "Melanie"]
    assert named_people("What did Mel paint?", people) == ["Mel Brooks"]
    assert named_people("What did Carolines do?", people) == []
    assert named_people("What did caroline do?", people) == []  # names as written


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
    ],
)
def test_one_fact_questions(query: str) -> None:
    assert not is_aggregative(query)
