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
    # Write path: messages per L1 segment, counted whoever speaks (pinned rather than taken
    # from the settings, so a variant means the same thing whatever the deployment default).
    segment_messages: int = 2

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
# Aggregation-aware budgets: questions that gather facts get AGGREGATE_TOKENS, the others
# FACT_TOKENS; about one question in five gathers, so the mean stays under BUDGET.
AGGREGATE_TOKENS = 1200
FACT_TOKENS = 480
_SEG2 = RecallOptions(budgets=_leaves_only(20), dense_weight=LEXICAL_WEIGHT)
# One-message leaves cost about 45 tokens: 35 of them fill the aggregate budget.
_SEG1 = RecallOptions(budgets=_leaves_only(35), leaf_top_k=35, dense_weight=LEXICAL_WEIGHT)
_SPEAKER = Enhancements(pool=POOL, speaker_boost=0.2)
_TIME = replace(_SPEAKER, time_boost=0.1)
_TUNED = replace(_TIME, aggregate_max_tokens=AGGREGATE_TOKENS)


def _seg1(name: str, description: str, e: Enhancements, options: RecallOptions = _SEG1) -> Variant:
    """A variant on one-message segments; the budget follows from the aggregation idea."""
    max_tokens = FACT_TOKENS if e.aggregate_max_tokens is not None else BUDGET
    return Variant(
        name, description, options, max_tokens=max_tokens, enhancements=e, segment_messages=1
    )


VARIANTS: tuple[Variant, ...] = (
    # The ladder: each rung adds one idea to the one before.
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
    _seg1("seg1", "+ one message per L1 segment (write path), 35 leaves", Enhancements(pool=POOL)),
    _seg1("speaker", "+ speaker-aware: +0.2 to what the one person the query names said", _SPEAKER),
    _seg1("time", "+ time expressions resolved to a range (TSM): +0.1 inside it", _TIME),
    _seg1(
        "tuned",
        f"+ aggregation-aware budget: {AGGREGATE_TOKENS} tokens for questions gathering "
        f"facts, {FACT_TOKENS} otherwise",
        _TUNED,
    ),
    # Around the tuned configuration: each idea taken out (or added) with the others on.
    _seg1("tuned-no-speaker", "tuned without the speaker boost", replace(_TUNED, speaker_boost=0)),
    _seg1("tuned-no-time", "tuned without time-range resolution", replace(_TUNED, time_boost=0)),
    _seg1(
        "tuned-gate-off",
        "tuned without the offline relevance gate",
        _TUNED,
        options=replace(_SEG1, gating=False),
    ),
    _seg1(
        "tuned+session",
        "tuned + session support: +0.05 x summed score of the other leaves of the L2 session",
        replace(_TUNED, session_support=0.05),
    ),
    _seg1(
        "tuned+summaries",
        "tuned, also recalling 2 L2 session summaries and the profile within the same budget",
        _TUNED,
        options=replace(
            _SEG1,
            budgets={
                c: {Level.SEGMENT: 35, Level.SESSION: 2, Level.MONTH: 1}
                for c in ("simple", "hybrid", "complex")
            },
        ),
    ),
    Variant(
        "tuned-seg2",
        "tuned on two-message segments (the write-path default), 20 leaves",
        options=_SEG2,
        max_tokens=FACT_TOKENS,
        enhancements=_TUNED,
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
