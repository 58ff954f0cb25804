"""A word list as one alternation: the longest form wins over a word it begins with."""

from __future__ import annotations

import re

from memstream.domain.alternation import longest_first


def test_the_longer_word_is_tried_first() -> None:
    pattern = re.compile(longest_first(["sister", "sister-in-law", "cat"]))
    assert pattern.match("sister-in-law")[0] == "sister-in-law"  # type: ignore[index]
    assert longest_first(["a", "abc", "ab"]) == "abc|ab|a"


def test_words_of_one_length_come_in_one_order_whatever_order_they_are_given_in() -> None:
    words = ["cat", "dog", "sister", "emu", "ant"]
    assert longest_first(words) == longest_first(reversed(words)) == "sister|ant|cat|dog|emu"
    assert longest_first(["cat", "cat"]) == "cat"
