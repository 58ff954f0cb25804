"""Organisations whose slot the sentence or the name says: a school named as one is studied
at, a place one does one's work at is worked at, and working for no one closes an employer."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstream.domain.fact_extraction import extract_facts
from memstream.domain.fact_kinds import is_school
from memstream.domain.fact_timeline import current, timeline_of
from memstream.domain.facts import SELF_EMPLOYED, AtomicFact
from memstream.domain.models import SourceMessage

SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
MAYA = "speaker:maya"


def facts_of(text: str, when: datetime = SAID, event_id: str = "m1") -> tuple[AtomicFact, ...]:
    return extract_facts([SourceMessage(event_id, "Maya", "user", text, when)], user_id="u1")


def summary(text: str) -> set[tuple[str, str, str]]:
    return {(f.subject, f.attribute, f.value) for f in facts_of(text)}


@pytest.mark.parametrize(
    ("name", "school"),
    [
        ("Perimeter College", True),
        ("the University of Leeds", True),
        ("Mesa Elementary", True),
        ("Georgia Tech", True),
        ("Trinity", False),
        ("Banco Andino", False),
        ("a school", False),  # a kind, not a named school
        ("Tech", True),
        ("the tech team", False),
    ],
)
def test_a_school_is_known_by_its_names_head_word(name: str, school: bool) -> None:
    assert is_school(name) is school


@pytest.mark.parametrize(
    ("text", "expected", "near_miss"),
    [
        # A school named as one: going, starting, getting in, a course there.
        ("Lily started at Mesa Elementary and loves her teacher.",
         ("lily", "studies_at", "Mesa Elementary"),
         "Lily started at Mesa Bakery and loves her boss."),
        ("I got into the University of Leeds!", (MAYA, "studies_at", "the University of Leeds"),
         "I got into the car at Leeds."),
        ("My brother Tom goes to Leeds University now.",
         ("tom", "studies_at", "Leeds University"), "My brother Tom goes to Leeds now."),
        ("Accounting 101 at Perimeter College is kicking my butt.",
         (MAYA, "studies_at", "Perimeter College"),
         "His class at Perimeter College is kicking my butt."),
        ("My course at the Goethe Institute has a test next week.",
         (MAYA, "studies_at", "the Goethe Institute"),
         "We went to a concert at the Goethe Institute last week."),
        # Doing one's work at a named place.
        ("I'm still cooking at Trattoria del Sole and my feet hate me.",
         (MAYA, "works_at", "Trattoria del Sole"), "I'm cooking at home tonight."),
        ("Nine more working days at Banco Andino and then I'm free.",
         (MAYA, "works_at", "Banco Andino"), "My sister's shift at Banco Andino ran late."),
        # An employer said by its kind, then named, ending the sentence.
        ("Oh, I left the bank. I'm at a fintech now, Paystack.",
         (MAYA, "works_at", "Paystack"), "I'm at a fintech now, Paystack, for a meeting."),
        ("My sister is at a startup these days, Chiva Pay.",
         ("kin:maya:sister", "works_at", "Chiva Pay"), "I'm at a cafe now, Chiva Pay."),
        # Working for no one.
        ("Now I'm my own boss, which means I'm also the dishwasher.",
         (MAYA, "works_at", SELF_EMPLOYED), "She's my boss, which means I'm on time."),
        ("I went freelance in June.", (MAYA, "works_at", SELF_EMPLOYED),
         "Being your own boss sounds great."),
    ],
)  # fmt: skip
def test_an_organisation_read_by_its_kind_or_the_work_done_there(
    text: str, expected: tuple[str, str, str], near_miss: str
) -> None:
    assert expected in summary(text)
    assert not any(
        f.attribute == expected[1] and f.value == expected[2] for f in facts_of(near_miss)
    )


def test_a_question_about_a_school_states_nothing() -> None:
    assert not facts_of("Should I transfer to Georgia Tech?")
    assert not facts_of("Did Lily start at Mesa Elementary?")


def test_a_gerund_opening_a_sentence_is_no_subject_of_its_own() -> None:
    # Told as lived up to now, it is the speaker's state (`_own_gerund_state`); never a
    # person named "Being".
    assert {f.subject for f in facts_of("Being my own boss has been a wild ride.")} == {MAYA}
    assert not facts_of("Being my own boss is every kid's dream.")


def test_being_ones_own_boss_closes_the_employer_before() -> None:
    later = datetime(2023, 9, 1, tzinfo=UTC)
    observed = (
        *facts_of("I'm still cooking at Trattoria del Sole.", SAID, "m1"),
        *facts_of("Now I'm my own boss.", later, "m2"),
    )
    timeline = timeline_of(f for f in observed if f.attribute == "works_at")
    (holding,) = current(timeline)
    assert (holding.value, holding.text) == (SELF_EMPLOYED, "Maya is self-employed")
    assert holding.supersedes is not None
