"""A method's results in one run, and the flat baselines' coverage at any token count."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from memstream_lab.eval.metrics import OVERALL, Summary

MethodKind = Literal["memstream", "flat", "mem0"]


@dataclass(frozen=True)
class MethodResult:
    name: str
    kind: MethodKind
    description: str
    summaries: Mapping[str, Summary]
    fingerprint: str = ""
    primary: bool = False
    # Answer coverage per (conversation, question index), for paired comparisons.
    coverages: Mapping[tuple[str, int], float] = field(default_factory=dict)
    # The token ceiling this method ran at when it is a point of the token curve (curve.py).
    budget: int | None = None
    # A flat point filled to the tokens memstream spent at `budget`, not to `budget` itself.
    matched: bool = False

    def recall(self, category: str = OVERALL) -> float | None:
        found = self.summaries.get(category)
        return found.evidence_recall if found else None

    def coverage(self, category: str = OVERALL) -> float | None:
        found = self.summaries.get(category)
        return found.answer_coverage if found else None

    @property
    def tokens(self) -> float:
        return self.summaries[OVERALL].tokens_per_query


def interpolate(points: Sequence[tuple[float, float]], x: float) -> float:
    """y at x on the polyline through `points` (sorted by x); the end segments extend."""
    ordered = sorted(points)
    if len(ordered) == 1:
        return ordered[0][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(ordered):
        if x <= x1 or (x1, y1) == ordered[-1]:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return ordered[-1][1]


def top_k_flats(methods: Sequence[MethodResult]) -> list[MethodResult]:
    """The flat baselines of fixed top-k (the token curve's budget-filled ones left out)."""
    return [m for m in methods if m.kind == "flat" and m.budget is None]


def best_flat_at(flats: Sequence[MethodResult], tokens: float, category: str) -> float | None:
    """The best answer coverage a flat method (any kind, top-k interpolated) reaches at
    `tokens` recalled tokens per query."""
    curves: dict[str, list[tuple[float, float]]] = {}
    for m in top_k_flats(flats):
        value = m.coverage(category)
        if value is not None:
            curves.setdefault(m.name.split("@")[0], []).append((m.tokens, value))
    values = [interpolate(points, tokens) for points in curves.values()]
    return max(values) if values else None
