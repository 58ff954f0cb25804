"""Token counting: the documented rule, its bounds, and prefix fitting for recall budgets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.domain.tokens import count_tokens, fit_to_budget


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("  \n\t ", 0),
        ("Hello, world!", 4),
        # Matches a BPE tokenizer (cl100k) on plain English.
        ("The quick brown fox jumps over the lazy dog.", 10),
        ("planet", 1),  # up to six letters: one token
        ("planets", 2),  # longer words: one token per four letters
        ("consolidation", 4),
        ("2024", 2),  # digits in groups of three
        ("123", 1),
        ("café", 2),  # non-ASCII letters count one each
        ("你好", 2),
        ("🙂🙂", 2),
    ],
)
def test_counts_follow_the_documented_rule(text: str, expected: int) -> None:
    assert count_tokens(text) == expected


@settings(max_examples=200)
@given(st.text())
def test_count_lies_between_words_and_visible_characters(text: str) -> None:
    visible = sum(1 for ch in text if not ch.isspace())
    assert len(text.split()) <= count_tokens(text) <= visible


@settings(max_examples=200)
@given(st.text(), st.text())
def test_count_is_additive_across_whitespace_and_grows_with_text(a: str, b: str) -> None:
    assert count_tokens(f"{a} {b}") == count_tokens(a) + count_tokens(b)
    assert count_tokens(a + b) >= count_tokens(a)


def test_leading_items_that_fit_are_counted() -> None:
    items = [("a", "one two three"), ("b", "four five"), ("c", "six")]
    assert fit_to_budget(items, 0) == 0
    assert fit_to_budget(items, 3) == 1
    assert fit_to_budget(items, 4) == 1
    assert fit_to_budget(items, 5) == 2
    assert fit_to_budget(items, 6) == 3
    assert fit_to_budget(iter(items), 100) == 3


def test_an_item_too_large_stops_the_prefix() -> None:
    # Later small items are not taken out of order: recall keeps its ranking.
    assert fit_to_budget([("a", "x " * 50), ("b", "y")], 10) == 0


def test_negative_budget_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        fit_to_budget([], -1)


@settings(max_examples=200)
@given(st.lists(st.text(max_size=40), max_size=10), st.integers(min_value=0, max_value=60))
def test_fit_is_the_longest_prefix_within_budget(texts: list[str], budget: int) -> None:
    fitted = fit_to_budget([(str(i), t) for i, t in enumerate(texts)], budget)
    costs = [count_tokens(t) for t in texts]
    assert sum(costs[:fitted]) <= budget
    assert fitted == len(texts) or sum(costs[: fitted + 1]) > budget
