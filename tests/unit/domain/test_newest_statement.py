"""The newest of the strongest candidates joins a question about now, and closes what came
before it."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from memstream.domain.models import Level, MemoryNode, SourceMessage
from memstream.domain.newest_statement import (
    asked_subjects,
    newest_strong_leaf,
    with_newest_statement,
)
from memstream.domain.query import parse_query
from memstream.domain.ranking import RecalledMemory
from memstream.domain.tokens import count_tokens
from memstream.domain.validity import Validity

NOW = datetime(2024, 6, 1, tzinfo=UTC)
SIOBHAN = frozenset({"siobhan"})


def leaf(
    node_id: str, when: datetime, text: str, score: float, speaker: str = "Siobhan"
) -> RecalledMemory:
    message = SourceMessage(f"m-{node_id}", speaker, "user", text, when)
    node = MemoryNode(
        id=node_id,
        user_id="u1",
        level=Level.SEGMENT,
        t_start=when,
        t_end=when + timedelta(minutes=2),
        text=f"{speaker}: {text}",
        session_id=f"s-{node_id}",
        messages=(message,),
    )
    return RecalledMemory(node, score)


HURLEY = leaf("hurley", datetime(2022, 8, 20, tzinfo=UTC), "No contact sport ever again.", 0.5)
CLUB = leaf("club", datetime(2023, 9, 2, tzinfo=UTC), "Signed up with the rowing club.", 0.31)
REGATTA = leaf("regatta", datetime(2024, 5, 18, tzinfo=UTC), "We won our first regatta!", 0.32)
SMALL_TALK = leaf("chat", datetime(2024, 5, 25, tzinfo=UTC), "Rainy again, typical.", 0.05)
CANDIDATES = [HURLEY, CLUB, REGATTA, SMALL_TALK]


def test_the_newest_of_the_strongest_candidates_said_after_all_kept_is_chosen() -> None:
    # The chat is newer but weak: only the strongest few are weighed.
    assert newest_strong_leaf(CANDIDATES, [HURLEY], SIOBHAN, NOW) == REGATTA


def test_nothing_joins_when_recall_kept_something_as_new() -> None:
    assert newest_strong_leaf(CANDIDATES, [HURLEY, REGATTA], SIOBHAN, NOW) is None
    assert newest_strong_leaf(CANDIDATES, [SMALL_TALK], SIOBHAN, NOW) is None


def test_only_leaves_about_the_person_asked_and_said_by_the_asked_time_count() -> None:
    someone_else = leaf("cian", datetime(2024, 5, 30, tzinfo=UTC), "Hurling final!", 0.9, "Cian")
    assert newest_strong_leaf([*CANDIDATES, someone_else], [HURLEY], SIOBHAN, NOW) == REGATTA
    before_regatta = datetime(2024, 1, 1, tzinfo=UTC)
    assert newest_strong_leaf(CANDIDATES, [HURLEY], SIOBHAN, before_regatta) == CLUB


def test_the_newest_statement_joins_last_and_closes_what_was_said_before_it() -> None:
    memories, added = with_newest_statement([HURLEY], CANDIDATES, SIOBHAN, NOW, room=500)
    assert [m.node.id for m in memories] == ["hurley", "regatta"]
    assert added == count_tokens(REGATTA.node.text)
    assert memories[0].validity == Validity(None, REGATTA.node.t_start, None, "inferred")
    assert memories[1].validity is None
    # It takes no kept memory's place: it scores as the weakest kept.
    assert memories[1].score == HURLEY.score


def test_a_validity_read_from_facts_is_kept() -> None:
    dated = dataclasses.replace(HURLEY, validity=Validity(HURLEY.node.t_start, None, None))
    memories, _ = with_newest_statement([dated], CANDIDATES, SIOBHAN, NOW, room=500)
    assert memories[0].validity == dated.validity


def test_without_room_nothing_changes() -> None:
    memories, added = with_newest_statement([HURLEY], CANDIDATES, SIOBHAN, NOW, room=2)
    assert memories == [HURLEY]
    assert added == 0


def test_the_person_asked_is_the_one_named_after_an_owner() -> None:
    assert asked_subjects(parse_query("Which bank does Hamid's brother Reza use?")) == {"reza"}
    assert asked_subjects(parse_query("Where does Aino's flatmate live?")) == {"aino"}
    assert asked_subjects(parse_query("What sport does Siobhan do now?")) == SIOBHAN
