"""A cleaned text's words, as the entity reader sees them: each word's place, its lower case
without a possessive ending, whether it is capitalised and whether it opens a sentence; and
whether a word can be a name. Pure, standard library only.

Most words of a message are read only as their lower case, so a sentence's start is worked
out for capitalised words alone (when asked), from the gap since the word before.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from memstream.domain.entity_lexicon import COMMON_WORD_NAMES, MONTHS, NOT_NAMES, WEEKDAYS

MAX_TOKEN_CHARS = 30  # a longer word is not a name (hostile text: a 10,000-character "name")

# A word: a letter, then letters and digits, with "'" or "-" only between letters ("don't",
# "Jean-Luc"). Written as runs of a class, not one character per alternation: same words.
WORD = re.compile(r"[^\W\d_][^\W_]*(?:['-][^\W\d_][^\W_]*)*")
POSSESSIVE = re.compile(r"'s?$", re.IGNORECASE)
_REPEATS = re.compile(r"(.)\1{2,}")


@dataclass(frozen=True, slots=True)
class Words:
    """A cleaned text's words, one entry a word in each list. No object is made per word:
    most are read only as their lower case, and what is asked of a capitalised word alone
    (whether it opens a sentence, whether it can be a name) is worked out when asked."""

    text: str
    shown: list[str]  # as written
    starts: list[int]
    ends: list[int]
    lows: list[str]  # case-folded, without a possessive ending

    def __len__(self) -> int:
        return len(self.shown)

    def gap(self, left: int, right: int) -> str:
        """What stands between two words."""
        return self.text[self.ends[left] : self.starts[right]]

    def capitalised(self, i: int) -> bool:
        # One letter is an initial or a fragment ("U.S."), too little to tell a name by.
        word = self.shown[i]
        return word[0].isupper() and 2 <= len(word) <= MAX_TOKEN_CHARS

    def opens_sentence(self, i: int) -> bool:
        return _opens_sentence(self.text, self.ends[i - 1] if i else -1, self.starts[i])

    def is_name(self, i: int) -> bool:
        """Whether the word can be (part of) a name where nothing else says it is one."""
        low = self.lows[i]
        return (
            self.capitalised(i)
            # "Will"/"May" open questions; mid-sentence and capitalised they are names.
            and (low not in NOT_NAMES or (low in COMMON_WORD_NAMES and not self.opens_sentence(i)))
            and low not in WEEKDAYS
            and (low not in MONTHS or low in COMMON_WORD_NAMES)
            and (
                _REPEATS.sub(r"\1", low) == low or _REPEATS.sub(r"\1", low) not in NOT_NAMES
            )  # "Heyyy"
        )

    def could_name(self, i: int) -> bool:
        """Whether the word can be a name where the words before say it is one ("named
        Friday")."""
        low = self.lows[i]
        return self.capitalised(i) and (low not in NOT_NAMES or low in COMMON_WORD_NAMES)


# What may stand between a sentence's end and its first word, and what ends a sentence
# (emoji and other symbols end a chat sentence as often as a full stop does).
_OPENERS = " \t\"'([{*_"
_SENTENCE_ENDS = ".!?:;…-\u2013\u2014\n"
# How far back a sentence's end is looked for: a bounded look back keeps long texts linear.
_LOOK_BACK = 40


def read_words(text: str) -> Words:
    """The words of a cleaned text, in order."""
    matches = list(WORD.finditer(text))
    shown = [m.group() for m in matches]
    return Words(
        text,
        shown,
        [m.start() for m in matches],
        [m.end() for m in matches],
        [(POSSESSIVE.sub("", w) if "'" in w else w).casefold() for w in shown],
    )


def _opens_sentence(text: str, previous_end: int, start: int) -> bool:
    """Whether the word at `start` is the first of a sentence: nothing but openers before it
    within the look back, or a sentence's end. Only the gap since the previous word is read:
    a word ends in a letter or digit, which ends no sentence."""
    gap = text[max(previous_end, start - _LOOK_BACK, 0) : start]
    if gap == " " and previous_end >= 0:
        return False  # most words: one space after another word
    before = gap.rstrip(_OPENERS)
    if not before:
        # Only openers: the word before (if the look back reaches it) ends no sentence.
        return previous_end < 0 or previous_end <= start - _LOOK_BACK
    last = before[-1]
    return last in _SENTENCE_ENDS or unicodedata.category(last) == "So"
