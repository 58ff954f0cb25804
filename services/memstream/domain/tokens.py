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

_PIECE = re.compile(r"([A-Za-z]+)|([0-9]+)|\S")


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
    total = 0
    for match in _PIECE.finditer(text):
        word, digits = match.group(1), match.group(2)
        if word is not None:
            total += 1 if len(word) <= SHORT_WORD_CHARS else -(-len(word) // CHARS_PER_WORD_PIECE)
        elif digits is not None:
            total += -(-len(digits) // DIGITS_PER_PIECE)
        else:
            total += 1
    return total
