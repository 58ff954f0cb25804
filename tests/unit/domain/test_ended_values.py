"""What a change told in words says ended, and the earlier memories naming it it closes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memstream.domain.ended_values import closed_by_ended_values, ended_terms
from memstream.domain.facts import AtomicFact, make_fact, speaker_key
from memstream.domain.lexical import term_set
from memstream.domain.models import Level, MemoryNode, SourceMessage
from memstream.domain.ranking import RecalledMemory
from memstream.domain.validity import Validity

MAY = datetime(2023, 5, 13, 10, 0, tzinfo=UTC)
JUN = datetime(2023, 6, 24, 10, 0, tzinfo=UTC)
NOW = datetime(2024, 1, 1, tzinfo=UTC)


def said(text: str, speaker: str = "Grace", when: datetime = MAY) -> SourceMessage:
    return SourceMessage(f"m-{abs(hash(text))}", speaker, "user", text, when)


def memory(
    node_id: str, when: datetime, text: str, validity: Validity | None = None
) -> RecalledMemory:
    message = said(text, when=when)
    node = MemoryNode(
        id=node_id,
        user_id="u1",
        level=Level.SEGMENT,
        t_start=when,
        t_end=when + timedelta(minutes=2),
        text=f"Grace: {text}",
        session_id=node_id,
        messages=(message,),
    )
    return RecalledMemory(node, 0.5, validity)


def fact(value: str, when: datetime) -> AtomicFact:
    return make_fact(
        user_id="u1",
        subject=speaker_key("Grace"),
        subject_name="Grace",
        attribute="has",
        value=value,
        text=f"Grace has {value}",
        valid_from=when,
        recorded_at=when,
        source_ids=("m-dog",),
    )


def ended(text: str) -> set[str]:
    return set(ended_terms(said(text)))


def test_an_ending_verb_or_a_negated_anymore_names_what_ended() -> None:
    assert ended("Ellie quit keto, by the way.") == {"keto"}
    assert ended("I've left the Magpies; joined the Newtown Netball Club.") == set(
        term_set("Magpies")
    )
    assert ended("Nobody in the house calls him Biscuit anymore.") == {"biscuit"}
    assert ended("I sold my Vespa to a neighbour.") == set(term_set("Vespa"))
    assert ended("I've given up on meat.") == {"meat"}


def test_questions_plans_and_objects_of_left_that_end_nothing_name_nothing() -> None:
    assert ended("Did you quit keto?") == set()
    assert ended("I might sell the Vespa.") == set()
    assert ended("I left the hob on again.") == set()
    assert ended("Any more tips for a shy cat?") == set()
    assert ended("I still love Biscuit, more than anymore before.") == set()


ADOPTED = memory("adopted", MAY, "We adopted a dog! The shelter called him Biscuit.")
RENAMED = memory(
    "renamed", JUN, "Nobody in the house calls him Biscuit anymore. The kids renamed him Captain."
)
CAPTAIN = memory("captain", JUN + timedelta(days=90), "Captain needs a Halloween costume.")
DOG = fact("a dog", MAY)
ASKED = term_set("What is Grace's dog called?")


def test_what_named_an_ended_value_before_its_end_holds_until_it() -> None:
    stated = RecalledMemory(ADOPTED.node, 0.5, Validity(MAY, None, None))
    closed = closed_by_ended_values([CAPTAIN, RENAMED, stated], [RENAMED], [DOG], ASKED, NOW)
    by_id = {m.node.id: m.validity for m in closed}
    # The fact it states ("a dog") is named by the question itself, so it keeps nothing open.
    assert by_id == {
        "captain": None,
        "renamed": None,
        "adopted": Validity(MAY, JUN, None, "inferred"),
    }


def test_a_memory_naming_a_value_that_still_holds_is_left_open() -> None:
    puppy = fact("a puppy", MAY)
    both = memory("both", MAY, "The shelter called him Biscuit, our puppy.")
    closed = closed_by_ended_values([RENAMED, both], [RENAMED], [puppy], ASKED, NOW)
    assert closed[1].validity is None


def test_an_ending_told_after_the_asked_instant_or_in_the_questions_own_words_closes_nothing() -> (
    None
):
    memories = [RENAMED, ADOPTED]
    assert (
        closed_by_ended_values(memories, [RENAMED], [], ASKED, JUN - timedelta(days=1)) == memories
    )
    asked_biscuit = ASKED | term_set("Biscuit")
    assert closed_by_ended_values(memories, [RENAMED], [], asked_biscuit, NOW) == memories
