"""A fast, deterministic stand-in for an LLM tokenizer, used to keep recall within budgets.

The rule, chosen to err slightly high for English so that a budget is never overrun:
- a run of ASCII letters is one token up to 6 letters, else one per 4 letters (rounded up);
- a run of digits is one token per 3 digits (rounded up), as BPE vocabularies group them;
- any other visible character (punctuation, symbol, emoji, non-ASCII letter) is one token;
- whitespace is free.
"""

from __future__ import annotations

import re
from functools import lru_cache

SHORT_WORD_CHARS = 6
CHARS_PER_WORD_PIECE = 4
DIGITS_PER_PIECE = 3

# The rule's three kinds of piece, each found by one pass of its own: a letter run or a digit
# run is maximal either way, and every other visible character is one piece.
_LETTER_RUN = re.compile(r"[A-Za-z]+")
_DIGIT_RUN = re.compile(r"[0-9]+")
_OTHER_CHARACTER = re.compile(r"[^A-Za-z0-9\s]")


# Recall counts the same memories' texts on every request that finds them (and a cached
# node hands back the same string, whose hash is kept): a lookup instead of a regex pass.
@lru_cache(maxsize=16_384)
def count_tokens(text: str) -> int:
    """Approximate number of LLM tokens in `text` (see the module docstring for the rule)."""
    return count_tokens_once(text)


def count_tokens_once(text: str) -> int:
    """`count_tokens` without its cache: for texts made on the fly (an excerpt's passages),
    which would only push the memories' own texts out of it.

    The count is additive: no piece of the rule spans whitespace, and none joins a letter to
    a digit or either to another character, so two texts joined by a space, or by any
    character other than an ASCII letter or digit on either side of the joint, count the sum
    of their counts."""
    words = sum(
        1 if len(run) <= SHORT_WORD_CHARS else -(-len(run) // CHARS_PER_WORD_PIECE)
        for run in _LETTER_RUN.findall(text)
    )
    digits = sum(-(-len(run) // DIGITS_PER_PIECE) for run in _DIGIT_RUN.findall(text))
    return words + digits + len(_OTHER_CHARACTER.findall(text))
