"""Words as one regular-expression alternation, longest first.

A regex alternation takes the first branch that matches, so "sister" listed before
"sister-in-law" would match the shorter word inside the longer one; every word list the
rules compile goes through here so that the longest form always wins. Pure, standard library.
"""

from __future__ import annotations

from collections.abc import Iterable


def longest_first(words: Iterable[str]) -> str:
    """`words` joined by "|", longest first (the words are patterns: escape them before)."""
    return "|".join(sorted(words, key=len, reverse=True))
