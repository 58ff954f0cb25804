"""Scoring ancestors, pruning to budgets, ordering and token fitting: pure functions.

Leaves carry the fused score Qdrant gave them. An ancestor is scored from the recalled
leaves below it (`Support`): each leaf has exactly one path to the root, so the leaves below
a parent are the disjoint union of those below its children and the support of a parent is
the merge of its children's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from memstream.domain.models import Level, MemoryNode
from memstream.domain.recall_options import AncestorScoring
from memstream.domain.tokens import count_tokens
from memstream.domain.validity import Validity


@dataclass(frozen=True, slots=True)
class RecalledMemory:
    node: MemoryNode
    score: float
    # Derived from the facts its messages state (knowledge on); None when it states none.
    validity: Validity | None = None
    # The leaf's size when its text is an excerpt of it (`domain/excerpt.py`), else None.
    full_tokens: int | None = None

    @property
    def excerpt(self) -> bool:
        return self.full_tokens is not None


@dataclass(frozen=True, slots=True)
class Support:
    """The recalled leaves below a node: best score, summed score, how many."""

    best: float
    total: float
    leaves: int

    @classmethod
    def of_leaf(cls, score: float) -> Support:
        return cls(score, score, 1)

    def merge(self, other: Support) -> Support:
        return Support(
            max(self.best, other.best), self.total + other.total, self.leaves + other.leaves
        )

    def score(self, scoring: AncestorScoring) -> float:
        return self.best if scoring == "max" else self.total


def parent_support(
    nodes: Iterable[MemoryNode], support: Mapping[str, Support]
) -> dict[str, Support]:
    """Support of each parent of `nodes`, merged over its children that have support."""
    parents: dict[str, Support] = {}
    for node in nodes:
        own = support.get(node.id)
        if node.parent_id is None or own is None:
            continue
        known = parents.get(node.parent_id)
        parents[node.parent_id] = own if known is None else known.merge(own)
    return parents


def prune(
    nodes: Iterable[MemoryNode],
    support: Mapping[str, Support],
    budget: int,
    scoring: AncestorScoring,
) -> list[RecalledMemory]:
    """The `budget` best-supported nodes, best first (ties: more leaves, then newer, then id)."""
    scored = [(n, support[n.id]) for n in nodes if n.id in support]
    scored.sort(
        key=lambda ns: (-ns[1].score(scoring), -ns[1].leaves, -_seconds(ns[0].t_end), ns[0].id)
    )
    return [RecalledMemory(n, s.score(scoring)) for n, s in scored[:budget]]


def order(memories: Iterable[RecalledMemory], query_time: datetime) -> list[RecalledMemory]:
    """By level, then by how far each memory's end lies from the query time (TiMem eq. 11)."""
    at = _seconds(query_time)
    return sorted(
        memories,
        key=lambda m: (
            int(m.node.level),
            abs(_seconds(m.node.t_end) - at),
            m.node.id,
        ),
    )


def order_as_of(
    memories: Iterable[RecalledMemory], instant: datetime, until: datetime
) -> list[RecalledMemory]:
    """For a question about a past time: by level, then what was said by `until` (the end of
    the time asked about) before what was said after it, each part by how far its end lies
    from `instant`. What was said by then is what held then, until something changed it;
    what was said later may already tell the change ("Bought a scooter for the ride to the
    office" in January answers nothing about December, though it lies nearer)."""
    at = _seconds(instant)
    end = _seconds(until)
    return sorted(
        memories,
        key=lambda m: (
            int(m.node.level),
            _seconds(m.node.t_start) > end,
            abs(_seconds(m.node.t_end) - at),
            m.node.id,
        ),
    )


def fit_tokens(
    memories: Sequence[RecalledMemory], max_tokens: int, summary_share: float = 1.0
) -> tuple[list[RecalledMemory], int]:
    """The memories that fit in `max_tokens`, best score first; keeps the order.

    Summaries (L2-L5) take at most `summary_share` of the budget in that pass, so the
    leaves, which carry the evidence, are not crowded out by their own ancestors (scored
    as their best leaf); a summary that still fits in what the leaves leave is added after.
    A memory too long for what is left is skipped and shorter ones after it may still fit.
    Returns the kept memories and their token count, which never exceeds `max_tokens`.
    """
    if max_tokens < 0:
        raise ValueError("max_tokens must be >= 0")
    costs = [count_tokens(m.node.text) for m in memories]
    # Among equal scores the lower level (narrower, shorter) comes first.
    ranked = sorted(
        range(len(memories)), key=lambda i: (-memories[i].score, memories[i].node.level, i)
    )
    summary_cap = int(max_tokens * summary_share)
    kept: set[int] = set()
    total = summaries = 0
    for i in ranked:
        is_summary = memories[i].node.level != Level.SEGMENT
        if total + costs[i] > max_tokens or (is_summary and summaries + costs[i] > summary_cap):
            continue
        kept.add(i)
        total += costs[i]
        summaries += costs[i] if is_summary else 0
    for i in ranked:
        if i not in kept and total + costs[i] <= max_tokens:
            kept.add(i)
            total += costs[i]
    return [m for i, m in enumerate(memories) if i in kept], total


def leaf_spend(memories: Sequence[RecalledMemory], max_tokens: int) -> int:
    """What the leaves alone would take of `max_tokens` (`fit_tokens` without summaries)."""
    return fit_tokens([m for m in memories if m.node.level is Level.SEGMENT], max_tokens)[1]


_EPOCH = datetime(1970, 1, 1)


def _seconds(instant: datetime) -> float:
    """Seconds since 1970 UTC; a naive time is taken as UTC (stored times carry an offset)."""
    # Recall sorts the same cached nodes' times on every request (about 130 a request); a
    # datetime keeps its hash, so a lookup replaces the arithmetic. The fold is part of the
    # key: two times of one zone compare equal across a DST fold but differ in offset.
    return _epoch_seconds(instant, instant.fold)


@lru_cache(maxsize=1 << 16)
def _epoch_seconds(instant: datetime, fold: int) -> float:
    """Worked out on the wall time and the offset, never by converting to UTC: the UTC of
    9999-12-31T23:59:59-14:00 lies past the last year a datetime can hold."""
    offset = instant.utcoffset() or timedelta(0)
    return (instant.replace(tzinfo=None) - _EPOCH - offset).total_seconds()
