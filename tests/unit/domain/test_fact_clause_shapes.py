"""Constructions of any English conversation the offline extractor reads by their clause
shape (a gerund subject, an appositive, a possessive pronoun, a verb of acquiring), each with
a near miss of the same words it must not read."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstream.domain.fact_extraction import SENTENCE_BREAK, extract_facts, fact_sentence
from memstream.domain.fact_kinds import kind_of
from memstream.domain.facts import AtomicFact
from memstream.domain.models import SourceMessage

SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
MAYA = "speaker:maya"


def facts_of(text: str) -> tuple[AtomicFact, ...]:
    return extract_facts([SourceMessage("m1", "Maya", "user", text, SAID)], user_id="u1")


def summary(text: str) -> set[tuple[str, str, str, bool]]:
    return {(f.subject, f.attribute, f.value, f.negated) for f in facts_of(text)}


@pytest.mark.parametrize(
    ("text", "expected", "near_miss"),
    [
        # A gerund of a lasting state as the subject, tied to the speaker or told as lived:
        # the speaker's own state; a general remark or a life weighed is no one's.
        ("Living in Shenzhen means I can be in Hong Kong in an hour.",
         (MAYA, "lives_in", "Shenzhen", False), "Living in Shenzhen sounds amazing, I bet."),
        ("Being a nurse has taught me patience.", (MAYA, "job", "nurse", False),
         "Being a nurse is hard."),
        ("Living in Berlin has been great.", (MAYA, "lives_in", "Berlin", False),
         "Living in Berlin is expensive."),
        ("Renting an apartment in Denver means I pay for noise.",
         (MAYA, "lives_in", "Denver", False), "Renting an apartment in Denver was my plan."),
        ("Volunteering at the shelter has been great.", (MAYA, "volunteers_at", "the shelter",
         False), "Volunteering at the shelter made me feel great."),
        # An appositive names what the possessive noun is, of the speaker or of someone named.
        ("My huisarts, Dr. Visser, wants a blood test.", (MAYA, "huisarts", "Dr. Visser", False),
         "My sister, Dr. Visser and I went out."),
        ("My wife Sanne's doctor, Dr. Jansen, told her to cycle.",
         ("sanne", "doctor", "Dr. Jansen", False), "My point, Sarah, is that it works."),
        ("My boss, Mr. Lee, is strict.", (MAYA, "manager", "Mr. Lee", False),
         "I've struggled with my boss, Jon."),
        # "Still in" a place is staying there; with an end it is a visit.
        ("My parents are still in Hangzhou and complain.",
         ("kin:maya:parents", "lives_in", "Hangzhou", False),
         "My parents are still in Rome for the holidays."),
        # A possessive pronoun makes the thing whoever it stands for has.
        ("My friend Kenji came along on his old Kawasaki.", ("kenji", "motorbike", "Kawasaki",
         False), "My friend Kenji sent me his old Kawasaki."),
        # Coming to have a thing of a known make, by any verb of acquiring; its kind is its slot.
        ("Picking up a Yamaha MT-07 next week.", (MAYA, "motorbike", "Yamaha MT-07", False),
         "I ordered a Yamaha helmet."),
        ("I got the Pixel 8 for the camera.", (MAYA, "phone", "Pixel 8", False),
         "I got the Pixel 8 for my niece."),
        # "One" after a thing just named is one of it; a question naming two is no referent.
        ("Is the M2 MacBook Air enough for photos? I ordered one this morning.",
         (MAYA, "laptop", "M2 MacBook Air", False),
         "The M2 MacBook Air or the ThinkPad X1? I ordered one."),
        # The state words of a slot, said of anyone.
        ("I'm an omnivore again as of this month.", (MAYA, "diet", "omnivore", False),
         "The omnivore menu was great."),
        ("Ola is single again.", ("ola", "relationship", "single", False),
         "Ola is singled out again."),
        ("My sister Katja is the vegetarian in the family.", ("katja", "diet", "vegetarian",
         False), "My sister Katja is the vegetarian's nightmare."),
        # Playing an instrument in a named group, as a state; in a place, as an event, no.
        ("I'm playing bass in Harbour Lights now.", (MAYA, "member_of", "Harbour Lights",
         False), "I'm playing bass in New York next week."),
    ],
)  # fmt: skip
def test_a_construction_reads_its_fact_and_its_near_miss_does_not(
    text: str, expected: tuple[str, str, str, bool], near_miss: str
) -> None:
    assert expected in summary(text)
    assert not any(f[:3] == expected[:3] for f in summary(near_miss)), near_miss


def test_a_titles_full_stop_ends_no_sentence_and_names_no_one() -> None:
    assert SENTENCE_BREAK.split("My GP, Dr. Visser, retired. Mr. Bean left!") == [
        "My GP, Dr. Visser, retired.",
        "Mr. Bean left!",
    ]
    assert ("bakker", "job", "retired", False) in summary("Dr. Bakker retired, sadly.")


def test_a_generation_or_year_before_a_make_names_no_kind() -> None:
    assert kind_of("M2 MacBook Air") == "laptop"
    assert kind_of("2015 Honda Fit") == "car"
    assert kind_of("2015") is None


def test_a_plural_subject_reads_with_a_plural_verb() -> None:
    assert fact_sentence("Wei's parents", "lives_in", "Hangzhou", False) == (
        "Wei's parents live in Hangzhou"
    )
    assert fact_sentence("Wei", "lives_in", "Hangzhou", False) == "Wei lives in Hangzhou"
