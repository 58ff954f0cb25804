"""Token counting: the documented rule and its bounds."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.domain.tokens import count_tokens, count_tokens_once


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


def one_pass_count(text: str) -> int:
    """The rule as it was first written: one pass over the pieces, in order."""
    total = 0
    for match in re.finditer(r"([A-Za-z]+)|([0-9]+)|\S", text):
        word, digits = match.group(1), match.group(2)
        if word is not None:
            total += 1 if len(word) <= 6 else -(-len(word) // 4)
        elif digits is not None:
            total += -(-len(digits) // 3)
        else:
            total += 1
    return total


@settings(max_examples=500)
@given(st.text(alphabet=st.sampled_from("ab Zq7 09\n\t.,'-éü你🙂\u00a0\u2003x"), max_size=200))
def test_a_count_is_the_one_pass_count_of_the_pieces(text: str) -> None:
    assert count_tokens_once(text) == one_pass_count(text) == count_tokens(text)


@given(st.text(max_size=120))
def test_any_text_counts_as_the_one_pass_count(text: str) -> None:
    assert count_tokens_once(text) == one_pass_count(text)
