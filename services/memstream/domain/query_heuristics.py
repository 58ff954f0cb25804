"""Recall's planner and gate without a language model: cue words and shared terms.

The planner reads how much of the tree a query needs from its wording ("why", "usually":
complex; "when", "how often", two names: hybrid; else simple) and takes the query's content
words as keywords. The gate keeps the candidates that share a discriminating term with the
query. Pure rules, standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence

from memstream.domain.lexical import term_set
from memstream.domain.models import Complexity, Level, MemoryNode, Plan
from memstream.domain.query import Query


def plan_query(query: Query) -> Plan:
    """Complexity by cue words, keywords = the query's content words (names kept as written)."""
    return Plan(complexity=query.complexity, keywords=query.keywords)


def gate_candidates(
    query: Query, complexity: Complexity, candidates: Sequence[MemoryNode]
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
    wanted = set(query.term_set)
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
