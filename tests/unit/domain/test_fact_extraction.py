"""Offline fact extraction: general English statements in, typed facts out, precision first."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.domain.fact_extraction import (
    MAX_NAME_CHARS,
    MAX_VALUE_CHARS,
    clean_name,
    clean_value,
    extract_facts,
)
from memstream.domain.facts import AtomicFact
from memstream.domain.models import Role, SourceMessage

SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def facts_of(text: str, speaker: str = "Maya", role: Role = "user") -> tuple[AtomicFact, ...]:
    return extract_facts([SourceMessage("m1", speaker, role, text, SAID)], user_id="u1")


def summary(text: str) -> list[tuple[str, str, str, bool]]:
    return [(f.subject, f.attribute, f.value, f.negated) for f in facts_of(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I live in Berlin now.", ("lives_in", "Berlin")),
        ("I live in Berlin and I love it.", ("lives_in", "Berlin")),
        ("We just moved to New York!", ("lives_in", "New York")),
        ("Honestly, we moved from Porto to Lisbon.", ("lives_in", "Lisbon")),
        ("I've been working at Google for a while.", ("works_at", "Google")),
        ("I work for a small bakery downtown.", ("works_at", "a small bakery downtown")),
        ("I'm a nurse.", ("job", "nurse")),
        ("I started as a barista at a cafe.", ("job", "barista")),
        ("I work as an art teacher.", ("job", "art teacher")),
        ("I adopted a dog named Max!", ("pet", "dog named Max")),
        ("We have a cat.", ("pet", "cat")),
        ("I'm vegetarian.", ("diet", "vegetarian")),
        ("I went vegan.", ("diet", "vegan")),
        ("I love painting.", ("likes", "painting")),
        ("I'm really into rock climbing.", ("likes", "rock climbing")),
        ("I took up pottery.", ("hobby", "pottery")),
        ("I just bought a new car!", ("owns", "car")),
        ("I'm studying biology at UCLA.", ("studies", "biology")),
        ("Moved to Leeds last spring.", ("lives_in", "Leeds")),
        ("I'm based in Lyon these days.", ("lives_in", "Lyon")),
        ("I've lived in Madrid for five years.", ("lives_in", "Madrid")),
        ("Our dog Biscuit is sick.", ("pet", "dog named Biscuit")),
        ("I've gone vegan.", ("diet", "vegan")),
        ("I've been single for a year now.", ("relationship", "single")),
        ("We got married!", ("relationship", "married")),
        ("I'm lucky to have my husband.", ("relationship", "married")),
    ],
)
def test_a_first_person_statement_is_a_fact_about_the_speaker(
    text: str, expected: tuple[str, str]
) -> None:
    assert summary(text) == [("speaker:maya", *expected, False)]


def test_a_statement_about_someone_else_is_a_fact_about_them() -> None:
    facts = facts_of("My brother moved to Madrid. My sister is a doctor.")
    assert [(f.subject, f.attribute, f.value) for f in facts] == [
        ("kin:maya:brother", "lives_in", "Madrid"),
        ("kin:maya:sister", "job", "doctor"),
    ]
    assert {f.subject_name for f in facts} == {"Maya's brother", "Maya's sister"}
    assert all(not f.subject.startswith("speaker:") for f in facts)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I used to live in Porto.", ("lives_in", "Porto")),
        ("I no longer work at Acme.", ("works_at", "Acme")),
        ("I lost my job at Door Dash.", ("works_at", "Door Dash")),
        ("I'm no longer vegetarian.", ("diet", "vegetarian")),
        ("I don't have the cat any more.", ("pet", "cat")),
        ("I used to be a teacher.", ("job", "teacher")),
        ("I sold my car.", ("owns", "car")),
        ("Sadly we had to give away our rabbit.", ("pet", "rabbit")),
    ],
)
def test_past_states_and_negations_end_a_value(text: str, expected: tuple[str, str]) -> None:
    assert summary(text) == [("speaker:maya", *expected, True)]


@pytest.mark.parametrize(
    ("text", "subject", "diet"),
    [
        ("Ellie is no longer vegan.", "ellie", "vegan"),
        ("Ellie's not keto any more.", "ellie", "keto"),
        ("Ellie isn't vegetarian anymore.", "ellie", "vegetarian"),
        ("My sister is no longer vegetarian.", "kin:maya:sister", "vegetarian"),
    ],
)
def test_a_diet_said_to_hold_no_more_of_someone_else_ends_theirs(
    text: str, subject: str, diet: str
) -> None:
    assert summary(text) == [(subject, "diet", diet, True)]


@pytest.mark.parametrize("text", ["Ellie isn't here.", "Ellie isn't sure she is vegan."])
def test_a_negated_sentence_that_states_no_diet_ends_none(text: str) -> None:
    assert facts_of(text) == ()


@pytest.mark.parametrize(
    "text",
    [
        "Would you live in Paris?",
        "If I lived in Paris I'd be happy.",
        "I want to move to Tokyo.",
        "I'm a big fan of jazz.",
        "I love how you did that.",
        "I love it!",
        "We moved here last year.",
        "I live in a small town.",
        "I'm a bit tired.",
        "I started looking into counseling.",
        "I love reading your posts.",
        "My ex-husband lives in Leeds.",
        "I'm studying for my exams.",
        "I've lived in Paris, Rome and Tokyo.",
        "Living in Berlin is expensive.",
    ],
)
def test_what_is_not_plainly_a_fact_yields_nothing(text: str) -> None:
    assert facts_of(text) == ()


def test_valid_from_comes_from_the_words_when_they_say() -> None:
    (diet,) = facts_of("I've been vegetarian for three years.")
    assert diet.valid_from == datetime(2020, 5, 8, 13, 56, tzinfo=UTC)
    assert diet.recorded_at == SAID
    (home,) = facts_of("Since last May I've been living in Leeds.")
    assert home.valid_from == datetime(2022, 5, 1, tzinfo=UTC)
    (hobby,) = facts_of("I started playing acoustic guitar about five years ago; it's great.")
    assert (hobby.value, hobby.valid_from.year) == ("playing acoustic guitar", 2018)


def test_an_ending_is_dated_by_its_words_but_a_past_state_ends_when_said() -> None:
    (quit_job,) = facts_of("I quit my job at the bank last month.")
    assert (quit_job.negated, quit_job.valid_from) == (True, datetime(2023, 4, 1, tzinfo=UTC))
    (old_home,) = facts_of("I used to live in Porto ten years ago.")
    assert (old_home.negated, old_home.valid_from) == (True, SAID)


def test_a_gift_is_not_the_speakers_pet() -> None:
    assert facts_of("I got a puppy for my niece.") == ()
    assert facts_of("I bought a car for Ana.") == ()


def test_a_time_phrase_of_another_clause_does_not_date_the_fact() -> None:
    (home,) = facts_of("Three years ago I visited Rome, and now I live in Oslo.")
    assert home.valid_from == SAID


def test_two_values_of_a_single_valued_slot_in_one_message_yield_neither() -> None:
    assert facts_of("I live in Rome. I live in Oslo.") == ()
    # A past state beside a present one is no contradiction.
    assert summary("I used to live in Porto, but now I live in Berlin.") == [
        ("speaker:maya", "lives_in", "Porto", True),
        ("speaker:maya", "lives_in", "Berlin", False),
    ]


def test_a_multi_valued_slot_keeps_every_value_of_a_message() -> None:
    assert [f.value for f in facts_of("I love painting. I love hiking.")] == [
        "painting",
        "hiking",
    ]


def test_a_list_of_activities_or_pets_yields_each_until_the_list_ends() -> None:
    assert [f.value for f in facts_of("We love climbing, sliding, and playing games.")] == [
        "climbing",
        "sliding",
        "playing games",
    ]
    assert [f.value for f in facts_of("We've got a pup and a kitty.")] == ["pup", "kitty"]
    assert [f.value for f in facts_of("I love hiking and my kids love it.")] == ["hiking"]
    # Without a closing "and", a comma starts a clause, not a list item.
    text = "I love experimenting in the kitchen, coming up with new dishes."
    assert [f.value for f in facts_of(text)] == ["experimenting"]
    # An employer's name is never read as a list.
    assert [f.value for f in facts_of("I work at Marks and Spencer.")] == ["Marks and Spencer"]


def test_a_restated_fact_in_one_message_counts_once() -> None:
    assert len(facts_of("I live in Berlin. Yes, I live in Berlin.")) == 1


def test_assistant_turns_are_skipped() -> None:
    assert facts_of("I live in Berlin.", role="assistant") == ()


def test_a_fact_carries_its_message_and_a_readable_sentence() -> None:
    (fact,) = facts_of("I live in Berlin.")
    assert fact.source_ids == ("m1",)
    assert fact.text == "Maya lives in Berlin"
    assert fact.certainty == "stated"
    (implied,) = facts_of("My wife and I went hiking.")
    assert implied.certainty == "implied"


def test_extraction_is_deterministic_so_replays_overwrite() -> None:
    assert facts_of("I live in Berlin.") == facts_of("I live in Berlin.")


def test_hostile_text_is_reduced_to_a_bounded_clean_value() -> None:
    (fact,) = facts_of("I work at <b>Evil</b>\x00 Corp.")
    assert fact.value == "Evil Corp"
    assert facts_of("I live in " + "Very " * 2000 + "Long.") == ()
    hostile = "<script>x</script>\x07" + "N" * 10_000
    (named,) = facts_of("I live in Berlin.", speaker=hostile)
    assert len(named.subject_name) <= MAX_NAME_CHARS
    assert "<" not in named.subject_name and "\x07" not in named.subject_name


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_text_gives_clean_bounded_values(text: str) -> None:
    for fact in facts_of(text):
        assert len(fact.value) <= MAX_VALUE_CHARS
        assert fact.value == fact.value.strip() and fact.value
        assert not any(ch in fact.value for ch in "<>\x00\n")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=120))
def test_clean_value_and_name_never_grow_nor_keep_control_characters(raw: str) -> None:
    value = clean_value(raw)
    if value is not None:
        assert len(value) <= MAX_VALUE_CHARS
        assert not any(ord(ch) < 32 for ch in value)
    name = clean_name(raw)
    assert 0 < len(name) <= MAX_NAME_CHARS
    assert not any(ord(ch) < 32 for ch in name)
