"""A cleaned text's words, as the entity reader sees them: each word's place, its lower case
without a possessive ending, whether it is capitalised and whether it opens a sentence; and
whether a word can be a name. Pure, standard library only.

Most words of a message are read only as their lower case, so a sentence's start is worked
out for capitalised words alone, from the gap since the word before.
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

from memstream.domain.entity_lexicon import COMMON_WORD_NAMES, MONTHS, NOT_NAMES, WEEKDAYS

MAX_TOKEN_CHARS = 30  # a longer word is not a name (hostile text: a 10,000-character "name")

# A word: a letter, then letters and digits, with "'" or "-" only between letters ("don't",
# "Jean-Luc"). Written as runs of a class, not one character per alternation: same words.
WORD = re.compile(r"[^\W\d_][^\W_]*(?:['-][^\W\d_][^\W_]*)*")
POSSESSIVE = re.compile(r"'s?$", re.IGNORECASE)
_REPEATS = re.compile(r"(.)\1{2,}")


class Token(NamedTuple):
    text: str
    start: int
    end: int
    initial: bool  # first word of a sentence (told of capitalised words only)
    low: str  # case-folded, without a possessive ending
    # One letter is an initial or a fragment ("U.S."), too little to tell a name by.
    capitalised: bool


# What may stand between a sentence's end and its first word, and what ends a sentence
# (emoji and other symbols end a chat sentence as often as a full stop does).
_OPENERS = " \t\"'([{*_"
_SENTENCE_ENDS = ".!?:;…-\u2013\u2014\n"
# How far back a sentence's end is looked for: a bounded look back keeps long texts linear.
_LOOK_BACK = 40


def tokens_of(text: str) -> list[Token]:
    """The words of a cleaned text, in order."""
    tokens: list[Token] = []
    previous_end = -1  # no token yet
    for match in WORD.finditer(text):
        word = match.group()
        start, end = match.span()
        upper = word[0].isupper()
        tokens.append(
            Token(
                word,
                start,
                end,
                # Only a capital's place in its sentence tells anything (about names).
                upper and _opens_sentence(text, previous_end, start),
                (POSSESSIVE.sub("", word) if "'" in word else word).casefold(),
                upper and 2 <= len(word) <= MAX_TOKEN_CHARS,
            )
        )
        previous_end = end
    return tokens


def _opens_sentence(text: str, previous_end: int, start: int) -> bool:
    """Whether the word at `start` is the first of a sentence: nothing but openers before it
    within the look back, or a sentence's end. Only the gap since the previous word is read:
    a word ends in a letter or digit, which ends no sentence."""
    gap = text[max(previous_end, start - _LOOK_BACK, 0) : start]
    if gap == " ":
        return False  # most words: one space after another word
    before = gap.rstrip(_OPENERS)
    if not before:
        # Only openers: the word before (if the look back reaches it) ends no sentence.
        return previous_end < 0 or previous_end <= start - _LOOK_BACK
    last = before[-1]
    return last in _SENTENCE_ENDS or unicodedata.category(last) == "So"


def is_name_token(token: Token) -> bool:
    low = token.low
    return (
        token.capitalised
        # "Will"/"May" open questions; mid-sentence and capitalised they are names.
        and (low not in NOT_NAMES or (low in COMMON_WORD_NAMES and not token.initial))
        and low not in WEEKDAYS
        and (low not in MONTHS or low in COMMON_WORD_NAMES)
        and (
            _REPEATS.sub(r"\1", low) == low or _REPEATS.sub(r"\1", low) not in NOT_NAMES
        )  # "Heyyy"
    )


def could_name(token: Token) -> bool:
    """Whether a token can be a name where the words before say it is one ("named Friday")."""
    return token.capitalised and (token.low not in NOT_NAMES or token.low in COMMON_WORD_NAMES)
