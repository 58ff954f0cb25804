"""Values whose slot is read from the words around them, not from a fixed attribute: a role
noun said with what it is for ("my running coach Rob"), a place whose name says its kind
("EQ Bank", "Café Lumen"), a medicine taken, a camera by its make. Each construction with a
near miss it must not read."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from memstream.domain.fact_extraction import extract_facts
from memstream.domain.fact_kinds import named_place, place_kind
from memstream.domain.fact_timeline import current, timelines_of
from memstream.domain.facts import AtomicFact, is_single_valued
from memstream.domain.models import SourceMessage

SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
MAYA = "speaker:maya"


def facts_of(text: str, at: datetime = SAID, event: str = "m1") -> tuple[AtomicFact, ...]:
    return extract_facts([SourceMessage(event, "Maya", "user", text, at)], user_id="u1")


def summary(text: str) -> set[tuple[str, str, str]]:
    return {(f.subject, f.attribute, f.value) for f in facts_of(text) if not f.negated}


@pytest.mark.parametrize(
    ("text", "expected", "near_miss"),
    [
        # A role noun after a word saying what it is for: the head is the attribute.
        (
            "My running coach Rob says I need more rest.",
            (MAYA, "coach", "Rob"),
            "My running shoes Nike are worn out.",
        ),
        (
            "Rob, my running coach, says I need rest.",
            (MAYA, "coach", "Rob"),
            "Rob, my running was slow, sorry.",
        ),
        (
            "Our property manager, Dana, never answers.",
            (MAYA, "manager", "Dana"),
            "Our old manager, Dana, never answered.",
        ),
        ("My piano teacher is Ms Lee.", (MAYA, "teacher", "Ms Lee"), "My piano teacher is lovely."),
        (
            "Our landlord Gary came by to fix the boiler.",
            (MAYA, "landlord", "Gary"),
            "My mum told Gary about the boiler.",
        ),
        # A place whose name says its kind, where one goes, banks or is a regular.
        (
            "I moved my account to EQ Bank.",
            (MAYA, "bank", "EQ Bank"),
            "I moved my account to the bank.",
        ),
        (
            "We go to St Mary's Church every Sunday.",
            (MAYA, "church", "St Mary's Church"),
            "We went to St Mary's Church for a wedding.",
        ),
        (
            "I'm a regular at Blue Door Café these days.",
            (MAYA, "cafe", "Blue Door Café"),
            "I'm a regular at Blue Door these days.",
        ),
        (
            "I joined Iron Temple Gym in January.",
            (MAYA, "gym", "Iron Temple Gym"),
            "I joined Iron Temple in January.",
        ),
        (
            "I go to the Fremantle food bank every week.",
            (MAYA, "food_bank", "Fremantle food bank"),
            "I go to the food bank every week.",
        ),
        # A medicine taken by the speaker: by a word of medicine in the sentence, or by a
        # medicine's ending.
        (
            "I started on amlodipine last week.",
            (MAYA, "medication", "amlodipine"),
            "I started on Monday last week.",
        ),
        ("My GP put me on metformin.", (MAYA, "medication", "metformin"), "My GP put me on hold."),
        (
            "I was prescribed Lipitor 20mg by my GP.",
            (MAYA, "medication", "Lipitor 20mg"),
            "I was prescribed rest by my GP.",
        ),
        (
            "I've been taking sertraline for a month.",
            (MAYA, "medication", "sertraline"),
            "I've been taking lessons for a month.",
        ),
        ("I'm on ramipril now.", (MAYA, "medication", "ramipril"), "I'm on holiday now."),
        # A camera by its make.
        (
            "I'm shooting with the Canon 6D now.",
            (MAYA, "camera", "Canon 6D"),
            "I'm shooting with the old lens now.",
        ),
        ("I switched to a Nikon Z6.", (MAYA, "camera", "Nikon Z6"), "I switched to a new job."),
    ],
)
def test_construction_and_its_near_miss(
    text: str, expected: tuple[str, str, str], near_miss: str
) -> None:
    assert expected in summary(text)
    subject, attribute, _ = expected
    assert not {s for s in summary(near_miss) if s[:2] == (subject, attribute)}


@pytest.mark.parametrize(
    "text",
    [
        "My mum told Tom about it.",  # a verb after the noun: no role
        "My old coach Rob retired.",  # a role said as past
        "My former landlord, Gary, called.",
        "Does my bank, the Co-op, charge fees?",  # a question
        "My sister takes metformin for her diabetes.",  # someone else's medicine
        "I'm on call tonight, the doctor said.",
        "We went to St Mary's Church last Sunday.",  # a visit
        "We moved to Utrecht last month and I had to register with a new GP.",  # a move
        "My company moved me to Singapore, the doctor said it's fine.",
    ],
)
def test_reads_no_open_kind(text: str) -> None:
    read = {(s, a) for s, a, _ in summary(text)}
    assert not read & {
        (MAYA, a) for a in ("coach", "landlord", "bank", "medication", "church", "cafe", "called")
    }


def test_kinds_are_single_valued_so_a_new_one_closes_the_old() -> None:
    for attribute in ("coach", "bank", "church", "cafe", "medication", "camera", "landlord"):
        assert is_single_valued(attribute)
    first = facts_of("I bank with Scotia. My bank, Scotia, is fine.", event="m1")
    later = facts_of("I moved my account to EQ Bank.", SAID + timedelta(days=30), "m2")
    timelines = timelines_of([*first, *later])
    now = SAID + timedelta(days=40)
    held = {
        f.value
        for key, timeline in timelines.items()
        if key[2] == "bank"
        for f in current(timeline, now)
    }
    assert held == {"EQ Bank"}


def test_a_name_only_figuratively_of_a_kind_keeps_its_slot() -> None:
    # "Iron Temple" is a gym: a temple is no kind, so joining it stays a membership.
    assert summary("I signed up at Iron Temple on 3rd Avenue.") == {
        (MAYA, "member_of", "Iron Temple")
    }


def test_place_kind_by_head_word() -> None:
    assert place_kind("EQ Bank") == "bank"
    assert place_kind("Bank of Ireland") == "bank"
    assert place_kind("Café Lumen") == "cafe"
    assert place_kind("the Fremantle food bank") == "food_bank"
    assert place_kind("the bank") is None  # any bank
    assert place_kind("Banking") is None
    assert named_place("EQ Bank now, since May") == "EQ Bank"
    assert named_place("the bank on the corner") is None


@pytest.mark.parametrize(
    "text",
    [
        "My running coach " + "R" + "o" * 10_000 + " says hi.",
        "I moved my account to " + "Bank " * 3_000,
        "I started on " + "a" * 10_000 + " pills.",
        "<b>My running coach</b> <i>Rob</i>, my coach, \x00\x1b[31m says hi.",
        "I'm on \x00amlodipine\x07 now; my GP put me on <script>metformin</script>.",
        "My " + "running " * 2_000 + "coach Rob is here.",
    ],
)
def test_hostile_input_keeps_a_defined_result(text: str) -> None:
    started = time.process_time()
    facts = facts_of(text)
    assert time.process_time() - started < 2.0
    assert facts_of(text) == facts  # the same facts on replay
    for fact in facts:
        assert len(fact.value) <= 60
        assert "\x00" not in fact.value and "<" not in fact.value
