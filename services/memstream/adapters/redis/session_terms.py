"""A session summary's lexical terms, kept beside its node (`ms:{u}:session_terms`).

Recall's summary signal (`domain/rerank.py`) reads, for every leaf of its candidate pool,
which of the query's terms the leaf's session summary holds. A heavy user's pool spreads over
a session a leaf or so, about as many sessions as leaves: reading and decoding those
summaries whole, and tokenising their text, was the largest part of a first read of a heavy
user's question, and it grew with how widely the history spreads a pool, up to its bound.
The terms are what the signal reads, so the transaction that writes a session summary writes
its term set too, and the one that removes it removes them: recall reads one short field a
session instead of a node.

The field names the lexicon it was tokenised with (`lexical.LEXICON`): a field written under
other word rules reads as missing, and the reader then tokenises the node as before, so what
the signal sees is always `term_set(summary.text)` under the running rules.
"""

from __future__ import annotations

from memstream.domain.lexical import LEXICON, term_set

# Terms are words, emoji or character pairs: none holds a line break (`domain/scripts.py`).
SEPARATOR = "\n"


def encoded_terms(text: str) -> str | None:
    """The field kept for a summary of `text`; None if its terms cannot be joined (then none
    is kept and readers tokenise the node)."""
    terms = sorted(term_set(text))
    if SEPARATOR in LEXICON or any(SEPARATOR in t for t in terms):
        return None
    return SEPARATOR.join([LEXICON, *terms])


def decoded_terms(raw: bytes | str) -> frozenset[str] | None:
    """The term set a field holds; None if it was written under other word rules."""
    field = raw.decode() if isinstance(raw, bytes) else raw
    lexicon, _, terms = field.partition(SEPARATOR)
    if lexicon != LEXICON:
        return None
    return frozenset(terms.split(SEPARATOR)) if terms else frozenset()
