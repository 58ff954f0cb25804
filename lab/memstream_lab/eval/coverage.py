"""Answer coverage: how much of a gold answer the recalled text holds, whatever level wrote it.

Evidence recall credits only the L1 leaves whose source ids name an evidence message, so a
summary or a profile that carries the answer earns nothing there. Answer coverage reads the
recalled text itself: the share of the gold answer's content words found in it. Both sides
are normalised the same way: lower case, the stems recall uses (`domain.lexical.stem`,
Snowball English), stopwords out, number words as digits ("two" -> "2", "7th" -> "7") and
month abbreviations spelled out ("Jan" -> "january"), so "7 May 2023" and "May 7th, 2023"
agree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memstream.domain.lexical import STOPWORDS, stem

_TOKEN = re.compile(r"[a-z0-9]+")
_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
_NUMBER_WORDS = {
    word: str(n)
    for n, words in enumerate(
        [
            ("zero",),
            ("one", "first", "once"),
            ("two", "second", "twice"),
            ("three", "third"),
            ("four", "fourth"),
            ("five", "fifth"),
            ("six", "sixth"),
            ("seven", "seventh"),
            ("eight", "eighth"),
            ("nine", "ninth"),
            ("ten", "tenth"),
            ("eleven", "eleventh"),
            ("twelve", "twelfth"),
        ]
    )
    for word in words
}
_MONTH_ABBREVIATIONS = {
    "jan": "january",
    "feb": "february",
    "mar": "march",
    "apr": "april",
    "jun": "june",
    "jul": "july",
    "aug": "august",
    "sep": "september",
    "sept": "september",
    "oct": "october",
    "nov": "november",
    "dec": "december",
}
# Words that only frame an answer ("around", "likely", "yes") and say nothing it must hold.
_FRAMING = frozenset({"also", "around", "yes", "likely", "probably", "maybe", "s", "t"})


def _normal(token: str) -> str:
    ordinal = _ORDINAL.match(token)
    if ordinal:
        return ordinal.group(1)
    if token in _NUMBER_WORDS:
        return _NUMBER_WORDS[token]
    token = _MONTH_ABBREVIATIONS.get(token, token)
    return stem(token)


def content_terms(text: str) -> frozenset[str]:
    """The normalised content words of a text: what coverage compares."""
    lowered = text.lower().replace("\u2019", "'").replace("'s", "")
    return frozenset(
        _normal(t) for t in _TOKEN.findall(lowered) if t not in STOPWORDS and t not in _FRAMING
    )


def answer_coverage(answer: str, recalled: Iterable[str]) -> float | None:
    """Share of the answer's content words found in the recalled texts; None when the answer
    has no content word to look for."""
    wanted = content_terms(answer)
    if not wanted:
        return None
    found: set[str] = set()
    for text in recalled:
        found |= wanted & content_terms(text)
        if found == wanted:
            break
    return len(found) / len(wanted)
