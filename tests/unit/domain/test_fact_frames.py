"""Facts implied by a message's frame: near a slot's prototypes, clearly ahead of the rest, and
holding exactly one value of the slot's shape. The vectors here are made by hand (one axis
per prototype), so the tests pin the decision, not the model's distances."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.domain.fact_frames import (
    MARGIN,
    THRESHOLD,
    Frames,
    frames_of,
    implied_facts,
    leaf_facts,
    may_imply,
    prototype_texts,
)
from memstream.domain.models import Level, MemoryNode, SourceMessage

SAID = datetime(2024, 3, 2, 9, 30, tzinfo=UTC)
PROTOTYPES = prototype_texts()
DIM = len(PROTOTYPES)


def axis(index: int) -> list[float]:
    return [1.0 if i == index else 0.0 for i in range(DIM)]


FRAMES = frames_of([axis(i) for i in range(DIM)])


def near(attribute: str, score: float = 0.8, runner_up: str | None = None) -> list[float]:
    """A unit vector whose cosine with the attribute's first prototype is `score` (and with
    the runner-up's first prototype what is left, when one is named)."""
    first = next(i for i, (a, _) in enumerate(PROTOTYPES) if a == attribute)
    vector = [0.0] * DIM
    vector[first] = score
    rest = math.sqrt(1.0 - score * score)
    if runner_up is not None:
        vector[next(i for i, (a, _) in enumerate(PROTOTYPES) if a == runner_up)] = rest
    return vector


def implied(text: str, vector: list[float], speaker: str = "Maya") -> set[tuple[str, str, str]]:
    message = SourceMessage("m1", speaker, "user", text, SAID)
    facts = implied_facts(message, vector, FRAMES, user_id="u1", speakers=("Maya", "Melanie"))
    return {(f.subject, f.attribute, f.value) for f in facts}


def test_a_message_near_a_frame_with_one_value_implies_it_from_when_it_was_said() -> None:
    message = SourceMessage("m1", "Maya", "user", "Landed in Lisbon with two suitcases!", SAID)
    (fact,) = implied_facts(message, near("lives_in"), FRAMES, user_id="u1")
    assert (fact.subject, fact.attribute, fact.value) == ("speaker:maya", "lives_in", "Lisbon")
    assert fact.certainty == "implied"
    assert fact.valid_from == SAID and fact.source_ids == ("m1",)
    assert fact.text == "Maya lives in Lisbon"


def test_a_time_phrase_dates_the_implied_value() -> None:
    message = SourceMessage(
        "m1", "Maya", "user", "Swimming at the Riverside Club since March, love it.", SAID
    )
    (fact,) = implied_facts(message, near("member_of"), FRAMES, user_id="u1")
    assert fact.value == "Riverside Club" and fact.valid_from < SAID


@pytest.mark.parametrize(
    "text",
    [
        "Landed in Lisbon or in Porto, I forget which.",  # two values: which one?
        "Should we move to Lisbon?",  # a question
        "If we move to Lisbon, I'll learn Portuguese.",  # a condition
        "I'm thinking about a flat in Lisbon.",  # weighing a change is not making it
        "My sister just landed in Lisbon.",  # someone else's
        "Landed! Tom just moved to Lisbon too.",
        "Landed! The flat is tiny.",  # no value
        "Thanks, Mel! The flat is tiny.",  # someone addressed
        "Great news John! The flat is tiny.",
        "Hey, John that's a tiny flat.",
        "Lisbon is lovely.",  # a sentence's first word may be any word
    ],
)
def test_nothing_is_implied_without_exactly_one_stated_value(text: str) -> None:
    assert implied(text, near("lives_in")) == set()


def test_a_frame_must_be_near_and_clearly_ahead() -> None:
    text = "Landed in Lisbon with two suitcases!"
    assert implied(text, near("lives_in", THRESHOLD - 0.01)) == set()
    # Ahead of another frame by less than the margin: the message may be about either.
    close = math.sqrt(1 - 0.7**2)
    assert 0.7 - close < MARGIN
    assert implied(text, near("lives_in", 0.7, runner_up="works_at")) == set()
    # Nearest what describes no change ("a trip", "a busy day"): nothing.
    assert implied(text, near("", 0.8)) == set()
    assert implied(text, near("lives_in", 0.8, runner_up="works_at")) == {
        ("speaker:maya", "lives_in", "Lisbon")
    }


def test_names_of_people_and_pets_are_no_frame() -> None:
    assert {a for a, _ in PROTOTYPES} == {"lives_in", "works_at", "member_of", ""}


def test_the_rules_reading_of_the_slot_wins_and_the_others_are_joined() -> None:
    said = SourceMessage("m1", "Maya", "user", "I live in Porto now.", SAID)
    landed = SourceMessage("m2", "Maya", "user", "First week at the new office in Nanshan!", SAID)
    leaf = MemoryNode(
        "l1", "u1", Level.SEGMENT, SAID, SAID, "", messages=(said, landed), speakers=("Maya",)
    )
    vectors = {said.text: near("lives_in"), landed.text: near("works_at")}
    facts = {(f.attribute, f.value, f.certainty) for f in leaf_facts(leaf, vectors, FRAMES)}
    assert facts == {("lives_in", "Porto", "stated"), ("works_at", "Nanshan", "implied")}
    # A message whose vector is not known implies nothing.
    assert {f.value for f in leaf_facts(leaf, {}, FRAMES)} == {"Porto"}


def test_frames_need_one_vector_per_prototype() -> None:
    with pytest.raises(ValueError):
        frames_of([axis(0)])
    assert isinstance(FRAMES, Frames)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Landed in Lisbon with two suitcases!", True),
        ("We went to see Melanie at the lake.", True),  # a speaker's name: who speaks is unknown
        ("Landed! The flat is tiny.", False),
        ("Thanks, Mel! The flat is tiny.", False),
        ("Should we move to Lisbon?", False),
        ("Lisbon is lovely.", False),
    ],
)
def test_a_message_that_could_imply_a_fact_is_known_by_its_text_alone(
    text: str, expected: bool
) -> None:
    assert may_imply(text) is expected


# Names (places, a club, the speakers and others), and words around them.
NAMES = ["Lisbon", "Porto", "Mel", "Melanie", "Coogee", "Rovers", "John"]
AROUND = ["Landed", "in", "Thanks,", "Hey,", "The", "flat", "my", "sister", "at", "we", "moved"]
WORDS = [*NAMES, *AROUND, "to", "if", "I"]


@given(
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=12),
    ends=st.lists(st.sampled_from([".", "!", "?", ","]), min_size=1, max_size=12),
    speaker=st.sampled_from(["Maya", "Melanie", "John"]),
)
def test_every_message_that_implies_a_fact_could_by_its_text_alone(
    words: list[str], ends: list[str], speaker: str
) -> None:
    # The messages a replay must embed alone (`may_imply`) include every one a frame reads.
    text = " ".join(w + ends[i % len(ends)] if i % 3 == 2 else w for i, w in enumerate(words))
    for attribute in ("lives_in", "works_at", "member_of"):
        if implied(text, near(attribute), speaker=speaker):
            assert may_imply(text)
