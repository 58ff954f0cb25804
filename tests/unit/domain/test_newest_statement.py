"""The newest of the strongest candidates joins a question about now, and closes what came
before it."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from tests.unit.fakes import leaf as quoted_leaf

from memstream.domain.newest_statement import (
    asked_subjects,
    newest_strong_leaf,
    shares_words,
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
    """A candidate leaf of one message, in a session of its own."""
    node = quoted_leaf(node_id, text, at=when, speaker=speaker)
    return RecalledMemory(dataclasses.replace(node, session_id=f"s-{node_id}"), score)


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


def test_a_memory_about_something_else_is_never_closed() -> None:
    # The weather was not among the question's strongest candidates: the newest statement
    # says nothing of it.
    weather = leaf("weather", datetime(2023, 1, 7, tzinfo=UTC), "Snowed in all week.", 0.02)
    memories, _ = with_newest_statement([HURLEY, weather], CANDIDATES, SIOBHAN, NOW, room=500)
    assert memories[0].validity is not None
    assert memories[1].validity is None


def test_kept_already_the_newest_closes_the_strong_leaves_that_share_its_words() -> None:
    # The gate kept all three: the sport said last holds, what it restates held until then.
    rowing = leaf("rowing", datetime(2024, 5, 18, tzinfo=UTC), "Rowing every Saturday now.", 0.3)
    gaa = leaf("gaa", datetime(2022, 8, 20, tzinfo=UTC), "Hurling every Saturday.", 0.5)
    knee = leaf("knee", datetime(2023, 2, 4, tzinfo=UTC), "My knee is finally better.", 0.4)
    memories, added = with_newest_statement(
        [gaa, knee, rowing], [gaa, knee, rowing], SIOBHAN, NOW, room=500
    )
    assert added == 0
    assert memories[0].validity == Validity(None, rowing.node.t_start, None, "inferred")
    # The knee shares no word with the newest: it is about something else.
    assert [m.validity for m in memories[1:]] == [None, None]


def test_a_line_of_the_newest_session_is_not_closed_by_it() -> None:
    # Said together: the lines before the newest in its session are as new as it is.
    said = datetime(2024, 5, 18, tzinfo=UTC)
    won = dataclasses.replace(REGATTA, node=dataclasses.replace(REGATTA.node, session_id="s9"))
    boat = leaf("boat", said - timedelta(minutes=5), "Our boat won, the regatta crew!", 0.4)
    boat = dataclasses.replace(boat, node=dataclasses.replace(boat.node, session_id="s9"))
    memories, _ = with_newest_statement([HURLEY, boat], [HURLEY, boat, won], SIOBHAN, NOW, 500)
    assert [m.node.id for m in memories] == ["hurley", "boat", "regatta"]
    assert memories[0].validity == Validity(None, boat.node.t_start, None, "inferred")
    assert memories[1].validity is None


def test_shared_words_are_content_words_other_than_the_names_asked() -> None:
    when = datetime(2024, 1, 1, tzinfo=UTC)
    painting = leaf("paint", when, "She's painting the hallway, Siobhan says.", 0.3)
    nurse = leaf("nurse", when, "She's a retired nurse, Siobhan told me.", 0.3)
    hallway = leaf("hall", when, "The hallway was green before.", 0.3)
    # "She's" is indexed as "she", a function word; the name is the person asked.
    assert not shares_words(nurse, painting, SIOBHAN)
    assert shares_words(hallway, painting, SIOBHAN)
