"""Recall's planner and gate without a language model: cue words and shared terms.

The planner reads how much of the tree a query needs from its wording ("why", "usually":
complex; "when", "how often", two names: hybrid; else simple) and takes the query's content
words as keywords. The gate keeps the candidates that share a discriminating term with the
query. Pure rules, standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memstream.domain.lexical import STOPWORDS, term_set, tokenize
from memstream.domain.models import Complexity, Level, MemoryNode, Plan

_COMPLEX = re.compile(
    r"\b(why|how(?! (?:often|many|much|long|old|far)\b)|patterns?|usually|typically|tends?"
    r"|over time|summari[sz]e|what kinds? of|personality|traits?|values|likely|prefer\w*)\b"
    r"|^\s*(would|might|could)\b",
    re.IGNORECASE,
)
_HYBRID = re.compile(
    r"\b(when|how often|how many|how long|before|after|since|until|first|last|latest|earlier"
    r"|later|recently|ago|date|years?|months?|weeks?|days?|yesterday|today|tomorrow|weekend"
    r"|during|between)\b",
    re.IGNORECASE,
)
_QUERY_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that shape a question rather than name what a memory would contain.
_QUESTION_WORDS = _words("often kind kinds sort type many much long likely usually ever both")


def plan_query(query: str) -> Plan:
    """Complexity by cue words, keywords = the query's content words (names kept as written)."""
    words = [w.removesuffix("'s") for w in _QUERY_WORD.findall(query)]
    names = {w for w in words[1:] if w[0].isupper() and w != "I"}
    complexity: Complexity = "simple"
    if _COMPLEX.search(query):
        complexity = "complex"
    elif _HYBRID.search(query) or len(names) >= 2:
        complexity = "hybrid"
    keywords: dict[str, str] = {}
    for word in words:
        if word.lower() in STOPWORDS or word.lower() in _QUESTION_WORDS or len(word) < 2:
            continue
        keywords.setdefault(word.lower(), word if word in names else word.lower())
    return Plan(complexity=complexity, keywords=tuple(keywords.values()))


def gate_candidates(
    query: str, complexity: Complexity, candidates: Sequence[MemoryNode]
) -> list[str]:
    """Keep profiles and candidates sharing a discriminating content term with the query.

    Complex queries keep everything (they favour recall over precision). Terms every leaf
    contains (usually the person's name) cannot discriminate and are ignored. When no
    non-profile candidate would survive, the rule has found nothing to go on: keep all.
    """
    every = [c.id for c in candidates]
    if complexity == "complex" or not candidates:
        return every
    terms = [term_set(c.text) for c in candidates]
    wanted = set(tokenize(query))
    # Shared by the leaves alone: summaries, long and varied, would hide a name every leaf
    # holds, and the leaves kept would then depend on which summaries came along.
    leaf_terms = [t for c, t in zip(candidates, terms, strict=True) if c.level is Level.SEGMENT]
    if len(leaf_terms) > 2:
        shared = set(leaf_terms[0]).intersection(*leaf_terms[1:])
        wanted = (wanted - shared) or wanted
    kept = [
        c.id for c, t in zip(candidates, terms, strict=True) if c.level is Level.MONTH or t & wanted
    ]
    profile_ids = {c.id for c in candidates if c.level is Level.MONTH}
    return kept if any(i not in profile_ids for i in kept) else every
