"""The knowledge-update scorer: when ranked answers put the true value first, nothing stale."""

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream_lab.knowledge.score import (
    Question,
    QuestionScore,
    ReturnedItem,
    mentions,
    says_past,
    score_question,
    shares_by_kind,
)

CURRENT = Question("current", expected=("Berlin",), superseded=("Porto",))
PREVIOUS = Question("previous", expected=("Porto",), superseded=("Berlin",))
PAST = Question(
    "past",
    expected=("Porto",),
    superseded=("Berlin",),
    query_time=datetime(2023, 7, 1, tzinfo=UTC),
)
APRIL_2024 = datetime(2024, 4, 1, tzinfo=UTC)


def items(*texts: str) -> list[ReturnedItem]:
    return [ReturnedItem(text) for text in texts]


def test_mentions_whole_words_only_ignoring_case_and_accents() -> None:
    assert mentions("She moved to MÁLAGA.", "Malaga")
    assert mentions("the flat in Vila\n Madalena", "Vila Madalena")
    assert not mentions("I signed up for Veganuary", "vegan")
    assert not mentions("Berliner Weisse", "Berlin")
    assert not mentions("anything", "  ")


def test_says_past_looks_only_at_the_sentence_naming_the_value() -> None:
    assert says_past("We used to live in Porto.", "Porto")
    assert says_past("Moved from Porto to Berlin in April.", "Porto")
    assert not says_past("We live in Porto. We used to rent.", "Porto")
    assert says_past("- Now: Maya lives in Berlin (since April 2024; before: Porto)", "Porto")
    assert not says_past("Have you been to Porto before? It's lovely.", "Porto")
    assert not says_past("I'm getting used to Porto.", "Porto")
    assert says_past("Javier and I split up last week.", "Javier")
    # Ages, errands and clock times are not the end of a value.
    assert not says_past("The Panda is fifteen years old.", "Panda")
    assert not says_past("Sam left the hob on again.", "Sam")
    assert not says_past("Have you been to Lisbon before?", "Lisbon")
    assert says_past("I quit my job at Lumen.", "Lumen")
    assert not says_past("Lumen: don't quit!", "Lumen")
    assert not says_past("I dropped my iPhone at the market.", "iPhone")


def test_expected_value_first_passes() -> None:
    score = score_question(CURRENT, items("Maya lives in Berlin now", "the weather was nice"))
    assert score.passed


def test_superseded_value_first_fails_even_if_expected_follows() -> None:
    score = score_question(CURRENT, items("our little flat in Porto", "we live in Berlin now"))
    assert not score.first_is_expected
    assert score.superseded_as_current
    assert not score.passed


def test_nothing_relevant_returned_fails() -> None:
    assert not score_question(CURRENT, items("the weather was nice")).passed
    assert not score_question(CURRENT, []).passed


def test_a_change_sentence_naming_both_values_answers_a_current_question() -> None:
    assert score_question(CURRENT, items("Maya moved from Porto to Berlin")).passed


def test_stale_value_anywhere_in_the_list_fails_a_current_question() -> None:
    score = score_question(
        CURRENT, items("we live in Berlin now", "rent", "the Porto flat has a balcony")
    )
    assert score.first_is_expected
    assert score.superseded_as_current
    assert not score.passed


def test_stale_value_with_closed_validity_is_not_presented_as_current() -> None:
    closed = ReturnedItem("Maya lives in Porto", valid_to=APRIL_2024)
    linked = ReturnedItem("Maya lives in Porto", superseded_by="fact-2")
    marked = ReturnedItem("She used to live in Porto.")
    for stale in (closed, linked, marked):
        assert score_question(CURRENT, [ReturnedItem("lives in Berlin"), stale]).passed
        # Shown first with its validity, the stale value does not hide the current one after it.
        assert score_question(CURRENT, [stale, ReturnedItem("lives in Berlin")]).passed


def test_a_current_value_closed_by_validity_does_not_count_as_the_answer() -> None:
    closed_expected = ReturnedItem("Maya lives in Berlin", valid_to=APRIL_2024)
    assert not score_question(CURRENT, [closed_expected]).first_is_expected


def test_previous_question_accepts_a_closed_fact_and_ignores_the_current_value_later() -> None:
    answer = ReturnedItem("Maya lives in Porto", valid_to=APRIL_2024, superseded_by="fact-2")
    assert score_question(PREVIOUS, [answer, ReturnedItem("Maya lives in Berlin")]).passed
    assert not score_question(PREVIOUS, items("Maya lives in Berlin", "flat in Porto")).passed


def test_past_question_skips_items_whose_validity_excludes_the_asked_time() -> None:
    later = ReturnedItem("Maya lives in Berlin", valid_from=APRIL_2024)
    then = ReturnedItem("Maya lives in Porto", valid_to=APRIL_2024)
    assert score_question(PAST, [later, then]).passed
    ended_before = ReturnedItem("Maya lives in Porto", valid_to=datetime(2023, 1, 1, tzinfo=UTC))
    assert not score_question(PAST, [ended_before]).passed


def test_past_question_fails_when_an_undated_current_value_comes_first() -> None:
    assert not score_question(PAST, items("we live in Berlin now", "the Porto flat")).passed


def test_a_distractor_before_the_answer_fails_but_after_it_is_fine() -> None:
    brother = Question("other_person", expected=("Madrid",), superseded=(), distractors=("Berlin",))
    assert not score_question(brother, items("Maya lives in Berlin", "Nuno is in Madrid")).passed
    assert score_question(brother, items("Nuno is in Madrid", "Maya lives in Berlin")).passed


def test_a_question_of_unknown_kind_or_without_an_answer_is_refused() -> None:
    with pytest.raises(ValueError, match="kind"):
        Question("latest", expected=("Berlin",), superseded=())
    with pytest.raises(ValueError, match="accepted form"):
        Question("current", expected=(), superseded=("Porto",))


def test_shares_by_kind_counts_each_kind_and_all() -> None:
    scores = [
        QuestionScore("current", first_is_expected=True, superseded_as_current=False),
        QuestionScore("current", first_is_expected=True, superseded_as_current=True),
        QuestionScore("past", first_is_expected=False, superseded_as_current=False),
    ]
    assert shares_by_kind(scores) == {"current": 0.5, "past": 0.0, "all": 1 / 3}
    assert shares_by_kind([]) == {}


# Text of digits and spaces names no value: it stands for memories unrelated to the question.
unrelated_text = st.text(alphabet="0123456789 ", max_size=30)
any_question = st.sampled_from([CURRENT, PREVIOUS, PAST])


@given(any_question, st.lists(unrelated_text, max_size=5), st.lists(unrelated_text, max_size=5))
def test_unrelated_items_never_change_the_verdict(
    question: Question, before: list[str], after: list[str]
) -> None:
    answer = ReturnedItem(f"it is {question.expected[0]}")
    padded = [*items(*before), answer, *items(*after)]
    assert score_question(question, padded) == score_question(question, [answer])
    assert score_question(question, padded).passed


@given(any_question, st.lists(unrelated_text, max_size=5))
def test_an_unmarked_stale_value_before_the_answer_always_fails(
    question: Question, between: list[str]
) -> None:
    stale = ReturnedItem(f"it is {question.superseded[0]}")
    answer = ReturnedItem(f"it is {question.expected[0]}")
    assert not score_question(question, [stale, *items(*between), answer]).passed
