"""Recall's planner and gate without a model: cue words decide scope, shared terms relevance."""

from datetime import UTC, datetime, timedelta

import pytest

from memstream.domain.models import Complexity, Level, MemoryNode
from memstream.domain.query import parse_query
from memstream.domain.query_heuristics import gate_candidates, plan_query

MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def node(text: str, level: Level, id_: str) -> MemoryNode:
    return MemoryNode(
        id=id_,
        user_id="u1",
        level=level,
        t_start=MAY_8,
        t_end=MAY_8 + timedelta(hours=1),
        text=text,
    )


@pytest.mark.parametrize(
    ("query", "complexity"),
    [
        ("What did Caroline research?", "simple"),
        ("When did Caroline go to the LGBTQ support group?", "hybrid"),
        ("How often does Melanie go camping?", "hybrid"),
        ("What do Melanie and Caroline both enjoy?", "hybrid"),
        ("Why did Caroline choose adoption?", "complex"),
        ("Would Caroline likely pursue writing as a career?", "complex"),
        ("What kind of art does Melanie make?", "complex"),
    ],
)
def test_plan_complexity(query: str, complexity: Complexity) -> None:
    assert plan_query(parse_query(query)).complexity == complexity


def test_plan_keywords_are_content_words_with_names_kept() -> None:
    plan = plan_query(parse_query("What did Caroline paint at the LGBTQ center last week?"))
    assert plan.keywords == ("Caroline", "paint", "LGBTQ", "center", "last", "week")
    assert not plan.degraded


def test_gate_keeps_matching_candidates_and_the_profile() -> None:
    pottery = node("Melanie said Caroline liked the pottery bowl.", Level.SEGMENT, "a")
    hiking = node("Melanie said Caroline went hiking.", Level.SEGMENT, "b")
    taxes = node("Melanie said Caroline filed taxes.", Level.SEGMENT, "c")
    profile = node("Profile as of May 2023: Caroline loves art.", Level.MONTH, "p")
    candidates = [pottery, hiking, taxes, profile]
    # "Caroline" is in every candidate, so it cannot decide anything: "pottery" does.
    assert gate_candidates(
        parse_query("What pottery did Caroline like?"), "simple", candidates
    ) == ["a", "p"]
    # Nothing matches: the rule has no evidence, so it keeps everything.
    assert gate_candidates(parse_query("Which car is red?"), "hybrid", candidates) == [
        "a",
        "b",
        "c",
        "p",
    ]
    # Complex questions favour recall.
    assert gate_candidates(parse_query("Why pottery?"), "complex", candidates) == [
        "a",
        "b",
        "c",
        "p",
    ]
    assert gate_candidates(parse_query("Why pottery?"), "simple", []) == []


def test_gate_reads_shared_terms_from_the_leaves_alone() -> None:
    pottery = node("Melanie said Caroline liked the pottery bowl.", Level.SEGMENT, "a")
    hiking = node("Melanie said Caroline went hiking.", Level.SEGMENT, "b")
    taxes = node("Melanie said Caroline filed taxes.", Level.SEGMENT, "c")
    session = node('Session on 8 May 2023 (Mon): Melanie: "I painted a lake."', Level.SESSION, "s")
    # The summary does not name Caroline; every leaf does, so the name still decides nothing
    # and the leaves kept are the same with or without the summary among the candidates.
    query = "What pottery did Caroline like?"
    assert gate_candidates(parse_query(query), "simple", [pottery, hiking, taxes, session]) == ["a"]
    assert gate_candidates(parse_query(query), "simple", [pottery, hiking, taxes]) == ["a"]
