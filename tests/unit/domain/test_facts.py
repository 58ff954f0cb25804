"""The atomic-fact model, and extraction and supersession working together."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstream.domain.fact_extraction import extract_facts
from memstream.domain.fact_timeline import Timeline, add, at, current, history
from memstream.domain.facts import (
    ATTRIBUTES,
    MULTI_VALUED,
    SINGLE_VALUED,
    AtomicFact,
    fact_id,
    is_single_valued,
    kin_key,
    make_fact,
    speaker_key,
)
from memstream.domain.models import SourceMessage

JAN = datetime(2024, 1, 10, tzinfo=UTC)
APR = datetime(2024, 4, 2, tzinfo=UTC)


def test_every_attribute_is_single_or_multi_valued_never_both() -> None:
    assert SINGLE_VALUED.isdisjoint(MULTI_VALUED)
    assert {"lives_in", "works_at", "job", "relationship", "diet"} <= SINGLE_VALUED
    assert {"likes", "hobby", "pet", "owns"} <= MULTI_VALUED
    assert all(is_single_valued(a) == (a in SINGLE_VALUED) for a in ATTRIBUTES)


@pytest.mark.parametrize(
    ("attribute", "single"),
    [
        ("gp", True),
        ("flatmate", True),
        ("favourite_band", True),
        ("boss", True),  # a singular noun ending in s
        ("flatmates", False),
        ("favourite_books", False),
        ("children", False),
        ("sister", False),  # singular, but people commonly have several at once
    ],
)
def test_an_open_attribute_holds_one_value_when_its_noun_is_singular(
    attribute: str, single: bool
) -> None:
    assert is_single_valued(attribute) is single


@pytest.mark.parametrize(
    "attribute", ["Favourite Colour", "gp!", "", "_gp", "a" * 40, "my gp", "lives-in"]
)
def test_what_is_not_a_slug_is_not_an_attribute(attribute: str) -> None:
    with pytest.raises(ValueError):
        is_single_valued(attribute)


def test_the_id_depends_on_the_claim_and_its_messages_not_on_case_or_order() -> None:
    one = fact_id("u1", "speaker:maya", "lives_in", "Berlin", False, ("m1", "m2"))
    assert one == fact_id("u1", "speaker:maya", "lives_in", " berlin", False, ("m2", "m1"))
    assert one != fact_id("u1", "speaker:maya", "lives_in", "Berlin", True, ("m1", "m2"))
    assert one != fact_id("u2", "speaker:maya", "lives_in", "Berlin", False, ("m1", "m2"))
    assert one != fact_id("u1", "speaker:maya", "lives_in", "Berlin", False, ("m1",))


def test_keys_name_the_speaker_and_their_kin() -> None:
    assert speaker_key("Maya Lopez") == "speaker:maya lopez"
    assert kin_key(speaker_key("Maya"), "Big Brother") == "kin:maya:big brother"


@pytest.mark.parametrize(
    "change",
    [
        {"attribute": "Favourite colour!"},
        {"source_ids": ()},
        {"valid_from": datetime(2024, 1, 1)},
    ],
)
def test_make_fact_refuses_what_cannot_be_stored(change: dict[str, object]) -> None:
    fields: dict[str, object] = {
        "user_id": "u1",
        "subject": "speaker:maya",
        "subject_name": "Maya",
        "attribute": "lives_in",
        "value": "Berlin",
        "text": "Maya lives in Berlin",
        "valid_from": JAN,
        "recorded_at": JAN,
        "source_ids": ("m1",),
    }
    with pytest.raises(ValueError):
        make_fact(**{**fields, **change})  # type: ignore[arg-type]


def timeline_from(*said: tuple[str, str, datetime]) -> dict[tuple[str, str], Timeline]:
    timelines: dict[tuple[str, str], Timeline] = {}
    for event_id, text, ts in said:
        message = SourceMessage(event_id, "Maya", "user", text, ts)
        for fact in extract_facts([message], user_id="u1"):
            key = (fact.subject, fact.attribute)
            timelines[key] = add(timelines.get(key, Timeline()), fact)
    return timelines


def values(facts: tuple[AtomicFact, ...]) -> list[str]:
    return [f.value for f in facts]


def test_a_move_supersedes_the_old_home_and_keeps_it_in_history() -> None:
    timelines = timeline_from(
        ("m1", "I live in Porto with my cat.", JAN),
        ("m2", "We live in Berlin now!", APR),
    )
    home = timelines[("speaker:maya", "lives_in")]
    assert values(current(home)) == ["Berlin"]
    assert values(at(home, datetime(2024, 2, 1, tzinfo=UTC))) == ["Porto"]
    assert [(v.value, v.valid_to) for v in history(home)] == [("Porto", APR), ("Berlin", None)]


def test_a_brothers_move_never_changes_the_speakers_home() -> None:
    timelines = timeline_from(
        ("m1", "I live in Porto.", JAN),
        ("m2", "My brother moved to Madrid.", APR),
    )
    assert values(current(timelines[("speaker:maya", "lives_in")])) == ["Porto"]
    assert values(current(timelines[("kin:maya:brother", "lives_in")])) == ["Madrid"]


def test_a_past_and_a_present_home_in_one_message_leave_the_present_current() -> None:
    timelines = timeline_from(
        ("m1", "I live in Porto.", JAN),
        ("m2", "I used to live in Porto, but now I live in Berlin.", APR),
    )
    home = timelines[("speaker:maya", "lives_in")]
    assert values(current(home)) == ["Berlin"]
    porto, berlin = history(home)
    assert (porto.value, porto.valid_to, porto.superseded_by) == ("Porto", APR, berlin.fact_id)
