"""Scoring ancestors, pruning to budgets, ordering and token fitting: pure functions.

Leaves carry the fused score Qdrant gave them. An ancestor is scored from the recalled
leaves below it (`Support`): each leaf has exactly one path to the root, so the leaves below
a parent are the disjoint union of those below its children and the support of a parent is
the merge of its children's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from memstream.domain.models import MemoryNode
from memstream.domain.tokens import count_tokens
from memstream.recall.options import AncestorScoring


@dataclass(frozen=True, slots=True)
class RecalledMemory:
    node: MemoryNode
    score: float


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
    ranked = sorted(
        (n for n in nodes if n.id in support),
        key=lambda n: (
            -support[n.id].score(scoring),
            -support[n.id].leaves,
            -_utc(n.t_end).timestamp(),
            n.id,
        ),
    )
    return [RecalledMemory(n, support[n.id].score(scoring)) for n in ranked[:budget]]


def order(memories: Iterable[RecalledMemory], query_time: datetime) -> list[RecalledMemory]:
    """By level, then by how far each memory's end lies from the query time (TiMem eq. 11)."""
    at = _utc(query_time)
    return sorted(
        memories,
        key=lambda m: (
            int(m.node.level),
            abs((_utc(m.node.t_end) - at).total_seconds()),
            m.node.id,
        ),
    )


def fit_tokens(
    memories: Sequence[RecalledMemory], max_tokens: int
) -> tuple[list[RecalledMemory], int]:
    """Drop the lowest-scored memories until the rest fit in `max_tokens`; keeps the order.

    Returns the kept memories and their token count, which never exceeds `max_tokens`.
    """
    if max_tokens < 0:
        raise ValueError("max_tokens must be >= 0")
    costs = [count_tokens(m.node.text) for m in memories]
    total = sum(costs)
    dropped: set[int] = set()
    # Lowest score first; among equals, the higher level (broader, longer) goes first.
    for i in sorted(
        range(len(memories)), key=lambda i: (memories[i].score, -memories[i].node.level)
    ):
        if total <= max_tokens:
            break
        dropped.add(i)
        total -= costs[i]
    kept = [m for i, m in enumerate(memories) if i not in dropped]
    return kept, total


def _utc(instant: datetime) -> datetime:
    # Stored times always carry an offset; a caller's naive time is taken as UTC.
    return instant.replace(tzinfo=UTC) if instant.tzinfo is None else instant.astimezone(UTC)
