"""Named memstream recall configurations, evaluated side by side in one run (ablations).

A variant is a `RecallOptions` preset plus how the request is made (complexity, token
budget) plus the experimental leaf-activation ideas of `eval/enhanced.py`, each switched on
by itself so the report shows what each one is worth.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Literal

from memstream.adapters.ports import Complexity
from memstream.domain.models import Level
from memstream.recall.options import RecallOptions

RequestedComplexity = Literal["auto", "simple", "hybrid", "complex"]


@dataclass(frozen=True)
class Enhancements:
    """Leaf-activation ideas measured here before they move into recall/ (see enhanced.py).

    With `pool` > 0 the leaves are re-ranked: the `pool` best L1 memories by the production
    fused score are fetched, each idea adds its bonus, and the best `leaf_top_k` go on.
    """

    pool: int = 0  # 0: production leaf activation, untouched
    speaker_boost: float = 0.0  # when the query names one person: their memories
    session_support: float = 0.0  # times the summed score of other leaves of the session
    time_boost: float = 0.0  # memories inside the time range the query names (TSM)
    time_pad_days: float = 3.0  # a thing is often told a few days after it happened
    aggregate_max_tokens: int | None = None  # budget for questions that gather many facts

    @property
    def reranks(self) -> bool:
        return self.pool > 0


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    options: RecallOptions = field(default_factory=RecallOptions)
    complexity: RequestedComplexity = "auto"
    max_tokens: int | None = None  # None: the service default (settings)
    enhancements: Enhancements = field(default_factory=Enhancements)
    segment_messages: int | None = None  # write path; None: the settings' value

    @property
    def method(self) -> str:
        return f"memstream:{self.name}"

    @property
    def fingerprint(self) -> str:
        # repr of frozen dataclasses (with their mapping-proxy budgets) is deterministic.
        spec = repr(
            (
                self.options,
                self.complexity,
                self.max_tokens,
                self.enhancements,
                self.segment_messages,
            )
        )
        return hashlib.sha256(spec.encode()).hexdigest()[:16]

    def max_tokens_for(self, aggregative: bool) -> int | None:
        extra = self.enhancements.aggregate_max_tokens
        return extra if aggregative and extra is not None else self.max_tokens


def _leaves_only(k: int) -> dict[Complexity, dict[Level, int]]:
    """Budgets that recall L1 memories only: every token goes to evidence-bearing leaves."""
    return {c: {Level.SEGMENT: k} for c in ("simple", "hybrid", "complex")}


BUDGET = 600  # the bar: recalled tokens per query, on average
LEXICAL_WEIGHT = 0.5  # dense share of the fused leaf score (production: 0.9)
POOL = 60
_SEG2 = RecallOptions(budgets=_leaves_only(20), dense_weight=LEXICAL_WEIGHT)
_SEG1 = RecallOptions(budgets=_leaves_only(30), leaf_top_k=30, dense_weight=LEXICAL_WEIGHT)
_TUNED = Enhancements(
    pool=POOL,
    speaker_boost=0.1,
    session_support=0.05,
    time_boost=0.1,
    aggregate_max_tokens=1000,
)
_TUNED_BASE = 500  # tokens for one-fact questions, so the average stays under BUDGET

VARIANTS: tuple[Variant, ...] = (
    Variant("default", "RecallOptions() as shipped; service token default"),
    Variant(
        "leaves-600",
        "L1 leaves only (no summaries), 600-token budget; production weights",
        options=RecallOptions(budgets=_leaves_only(20)),
        max_tokens=BUDGET,
    ),
    Variant(
        "lexical",
        f"+ lexical weight: dense_weight {LEXICAL_WEIGHT} instead of 0.9",
        options=_SEG2,
        max_tokens=BUDGET,
        enhancements=Enhancements(pool=POOL),
    ),
    Variant(
        "seg1",
        "+ one message per L1 segment (write path), 30 leaves",
        options=_SEG1,
        max_tokens=BUDGET,
        enhancements=Enhancements(pool=POOL),
        segment_messages=1,
    ),
    Variant(
        "speaker",
        "+ speaker-aware: +0.1 to memories of the one person the query names",
        options=_SEG1,
        max_tokens=BUDGET,
        enhancements=Enhancements(pool=POOL, speaker_boost=0.1),
        segment_messages=1,
    ),
    Variant(
        "session",
        "+ session support: +0.05 x summed score of the other leaves of the same L2 session",
        options=_SEG1,
        max_tokens=BUDGET,
        enhancements=Enhancements(pool=POOL, speaker_boost=0.1, session_support=0.05),
        segment_messages=1,
    ),
    Variant(
        "time",
        "+ time expressions resolved to a range (TSM): +0.1 inside it",
        options=_SEG1,
        max_tokens=BUDGET,
        enhancements=replace(_TUNED, aggregate_max_tokens=None),
        segment_messages=1,
    ),
    Variant(
        "tuned",
        "+ aggregation-aware budget: 1000 tokens for questions gathering facts, 500 otherwise",
        options=_SEG1,
        max_tokens=_TUNED_BASE,
        enhancements=_TUNED,
        segment_messages=1,
    ),
    # Leave-one-out from the tuned configuration: each idea's worth with all the others on.
    Variant(
        "tuned-no-speaker",
        "tuned without the speaker boost",
        options=_SEG1,
        max_tokens=_TUNED_BASE,
        enhancements=replace(_TUNED, speaker_boost=0.0),
        segment_messages=1,
    ),
    Variant(
        "tuned-no-session",
        "tuned without session support",
        options=_SEG1,
        max_tokens=_TUNED_BASE,
        enhancements=replace(_TUNED, session_support=0.0),
        segment_messages=1,
    ),
    Variant(
        "tuned-no-time",
        "tuned without time-range resolution",
        options=_SEG1,
        max_tokens=_TUNED_BASE,
        enhancements=replace(_TUNED, time_boost=0.0),
        segment_messages=1,
    ),
    Variant(
        "tuned-gate-off",
        "tuned without the offline relevance gate",
        options=replace(_SEG1, gating=False),
        max_tokens=_TUNED_BASE,
        enhancements=_TUNED,
        segment_messages=1,
    ),
)

PRIMARY = "tuned"


def select(names: list[str] | None) -> list[Variant]:
    """The named variants in catalogue order (all of them when `names` is None)."""
    if names is None:
        return list(VARIANTS)
    known = {v.name: v for v in VARIANTS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown variants {unknown}; known: {sorted(known)}")
    return [v for v in VARIANTS if v.name in names]
