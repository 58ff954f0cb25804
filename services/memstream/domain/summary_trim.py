"""A summary returned beside its leaves says only what those leaves do not: pure functions.

The offline summaries (and the LLM's, parsed into the same shape) are lists of facts, each
citing the messages it comes from. When recall returns a leaf, every fact of a summary that
cites one of that leaf's messages repeats what the reader already has, at the summary's
cost: such facts are taken out of the returned text, and a summary left with no fact of its
own is not returned at all. The stored node is untouched; only the recalled copy is trimmed.

One exception: a fact that dates its relative times (`(yesterday: 7 May 2023)`, see
`domain/event_time.py`) says something its leaf does not, the date itself. For a query that
asks when, it stays beside the leaf, cut to the words around those times and their dates
(`summary_text.dated_excerpt`).

Nodes without facts (written before facts were kept) are returned whole. A fact's text is
taken out of the node's text where it stands, so the level's layout (a week's day labels,
a profile's bullets) survives; a day label left with no fact after it goes too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence, Set
from dataclasses import replace

from memstream.domain.lexical import term_set
from memstream.domain.models import Fact, Level, MemoryNode
from memstream.domain.query import Query
from memstream.domain.ranking import RecalledMemory, fit_tokens
from memstream.domain.summary_text import dated_excerpt

# Fitting again after a trim frees tokens for more leaves, which may repeat more facts;
# usually the second pass settles it.
_MAX_REFITS = 3

# A week's day label ("9 May (Tue): ") with no fact after it: before another label or at
# the end of the text.
_DAY_LABEL = r" \d{1,2} [A-Z][a-z]+ \([A-Z][a-z]{2}\):"
_DANGLING_LABEL = re.compile(_DAY_LABEL + r"(?=" + _DAY_LABEL + r"|$)")


def covered_sources(leaves: Iterable[MemoryNode]) -> frozenset[str]:
    """The message ids the given leaves carry verbatim."""
    return frozenset(s for leaf in leaves if leaf.level is Level.SEGMENT for s in leaf.source_ids)


def is_repeat(fact: Fact, covered: Set[str]) -> bool:
    """Whether a returned leaf already holds one of the messages the fact comes from."""
    return any(s in covered for s in fact.source_ids)


def is_relevant(fact: Fact, terms: Set[str]) -> bool:
    """Whether the fact shares a content term with the query (any fact, for a query with
    no term to go by)."""
    return not terms or not terms.isdisjoint(term_set(fact.text))


def trim_summary(
    node: MemoryNode, covered: Set[str], terms: Set[str] = frozenset(), keep_dates: bool = False
) -> MemoryNode | None:
    """The summary without the facts the covered messages say (but those dating relative
    times, with `keep_dates`), or that share no term with the query; None when nothing is
    left. Leaves and nodes without facts come back unchanged."""
    if node.level is Level.SEGMENT or not node.facts:
        return node
    text = node.text
    kept: list[Fact] = []
    for fact in node.facts:
        relevant = is_relevant(fact, terms)
        if relevant and not is_repeat(fact, covered):
            kept.append(fact)
            continue
        excerpt = dated_excerpt(fact.text) if keep_dates and relevant else None
        shorter = _without(text, fact.text, excerpt or "")
        if shorter is None:  # the text was not written from these facts: keep it whole
            return node
        text = shorter
        if excerpt is not None:
            kept.append(replace(fact, text=excerpt))
    if len(kept) == len(node.facts) and text == node.text:
        return node
    if not kept:
        return None
    return replace(node, text=_DANGLING_LABEL.sub("", text), facts=tuple(kept))


def fit_without_repeats(
    memories: Sequence[RecalledMemory],
    max_tokens: int,
    summary_share: float,
    query: Query | None = None,
    keep_dates: bool = False,
) -> tuple[list[RecalledMemory], int]:
    """`fit_tokens`, with every summary trimmed of what is returned below it: the fitted
    leaves, and the facts of the fitted summaries of lower levels (a day repeats its
    sessions' best facts). Given the query, facts sharing no term with it go too. With
    `keep_dates` (the query asks when), facts dating relative times stay beside their
    leaves. The tokens this frees go to the next memories by score; fitted again until it
    settles."""
    people = {p for m in memories for p in m.node.speakers}
    terms = query.terms_without(people) if query is not None else frozenset()
    # A memory left as it was is kept as it was: most are leaves, which no trim changes.
    focused = [
        m if node is m.node else replace(m, node=node)
        for m in memories
        if (node := trim_summary(m.node, frozenset(), terms)) is not None
    ]
    fitted, tokens = fit_tokens(focused, max_tokens, summary_share)
    for _ in range(_MAX_REFITS):
        trimmed = _trimmed_below(focused, fitted, keep_dates)
        ids = [m.node.id for m in fitted]
        fitted, tokens = fit_tokens(trimmed, max_tokens, summary_share)
        if [m.node.id for m in fitted] == ids:
            return fitted, tokens
    # Unsettled (a near tie swaps leaves between fits): the last fit's summaries are trimmed
    # of its own leaves, which only shortens them, so everything still fits.
    return fit_tokens(_trimmed_below(fitted, fitted, keep_dates), max_tokens, summary_share)


def _trimmed_below(
    candidates: Sequence[RecalledMemory], fitted: Sequence[RecalledMemory], keep_dates: bool
) -> list[RecalledMemory]:
    """The candidates, each summary trimmed of what the fitted memories below it say."""
    returned = {m.node.id for m in fitted}
    covered = set(covered_sources(m.node for m in fitted))
    out = [m for m in candidates if m.node.level is Level.SEGMENT]
    for level in sorted({m.node.level for m in candidates} - {Level.SEGMENT}):
        said: set[str] = set()
        for m in candidates:
            if m.node.level is not level:
                continue
            node = trim_summary(m.node, covered, keep_dates=keep_dates)
            if node is None:
                continue
            out.append(RecalledMemory(node, m.score))
            if node.id in returned:
                said.update(s for f in node.facts for s in f.source_ids)
        covered |= said
    return out


def _without(text: str, part: str, instead: str = "") -> str | None:
    """`text` without `part` and the separator before it (a space or a bullet's line), where
    `part` stands whole (followed by a separator or the end); `instead` takes its place
    (after the same separator) when given."""
    for separator in ("\n- ", " "):
        needle = separator + part
        at = text.find(needle)
        while at >= 0:
            end = at + len(needle)
            if end == len(text) or text[end] in " \n":
                return text[:at] + (separator + instead if instead else "") + text[end:]
            at = text.find(needle, at + 1)
    return None
