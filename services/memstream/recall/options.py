"""Recall tunables: leaf depth, channel weight, per-complexity level budgets, gating.

Defaults follow DESIGN.md and TiMem's recall configuration (appendix B.3). Everything is a
frozen value so an evaluation harness can build variants with `dataclasses.replace` and run
ablations (no gating, other budgets, sum instead of max for ancestor scores).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from memstream.adapters.ports import Complexity
from memstream.domain.models import Level
from memstream.settings import Settings

AncestorScoring = Literal["max", "sum"]

# How many memories of each level a query of each complexity may recall. A level missing
# from a complexity's budget is not recalled at all (simple queries skip days and weeks).
DEFAULT_BUDGETS: Mapping[Complexity, Mapping[Level, int]] = MappingProxyType(
    {
        "simple": MappingProxyType({Level.SEGMENT: 20, Level.SESSION: 4, Level.MONTH: 1}),
        "hybrid": MappingProxyType(
            {Level.SEGMENT: 20, Level.SESSION: 4, Level.DAY: 2, Level.MONTH: 1}
        ),
        "complex": MappingProxyType(
            {Level.SEGMENT: 20, Level.SESSION: 8, Level.DAY: 4, Level.WEEK: 2, Level.MONTH: 1}
        ),
    }
)


@dataclass(frozen=True)
class RecallOptions:
    """How recall behaves; the defaults are the production configuration.

    `ancestor_scoring` decides what an ancestor is worth: "max" (default) is the best score
    among the recalled leaves below it, so ancestor and leaf scores share one scale and the
    token budget can compare them; ties go to the ancestor with more recalled leaves below
    it. "sum" adds the leaves' scores instead, which favours broad ancestors over precise
    ones (an ablation knob).
    """

    leaf_top_k: int = 20
    dense_weight: float = 0.9
    budgets: Mapping[Complexity, Mapping[Level, int]] = field(
        default_factory=lambda: DEFAULT_BUDGETS
    )
    gating: bool = True
    ancestor_scoring: AncestorScoring = "max"

    def __post_init__(self) -> None:
        if self.leaf_top_k <= 0:
            raise ValueError("leaf_top_k must be positive")
        if not 0.0 <= self.dense_weight <= 1.0:
            raise ValueError("dense_weight must be in [0, 1]")
        missing = {"simple", "hybrid", "complex"} - set(self.budgets)
        if missing:
            raise ValueError(f"budgets lack complexities {sorted(missing)}")
        if any(n < 0 for per_level in self.budgets.values() for n in per_level.values()):
            raise ValueError("budgets must not be negative")

    @classmethod
    def from_settings(cls, settings: Settings) -> RecallOptions:
        return cls(leaf_top_k=settings.recall_leaf_top_k, dense_weight=settings.recall_dense_weight)

    def levels(self, complexity: Complexity) -> dict[Level, int]:
        """The levels a complexity recalls, with their budgets (zero budgets left out)."""
        return {level: n for level, n in sorted(self.budgets[complexity].items()) if n > 0}
