"""Words as one regular-expression alternation, longest first.

A regex alternation takes the first branch that matches, so "sister" listed before
"sister-in-law" would match the shorter word inside the longer one; every word list the
rules compile goes through here so that the longest form always wins. Pure, standard library.
"""

from __future__ import annotations

from collections.abc import Iterable


def longest_first(words: Iterable[str]) -> str:
    """`words` joined by "|", longest first, words of one length in alphabetical order (the
    words are patterns: escape them before). Given a set, the order would change with the
    interpreter's hash seed, and with it the compiled pattern, and what a rule reads where two
    patterns of one length match at one place: every process must read the same facts."""
    return "|".join(sorted(set(words), key=lambda word: (-len(word), word)))
