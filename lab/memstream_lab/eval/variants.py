"""Named memstream recall configurations, evaluated side by side in one run (ablations).

A variant is a `RecallOptions` preset, the pipeline's gate and fit stages (the shipped
ones, or one with an idea taken out), how the request is made (complexity, token ceiling)
and the write path's segmentation. `default` is memstream as shipped; every other variant
changes one thing, so the report shows what each idea is worth on its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from memstream.domain.models import COMPLEXITIES, Complexity, Level, RequestedComplexity
from memstream.domain.query import Query
from memstream.domain.ranking import RecalledMemory, fit_tokens, leaf_spend
from memstream.domain.recall_options import LEAVES, RecallOptions
from memstream.domain.summary_trim import fit_without_repeats
from memstream.ports import LanguageModel
from memstream.recall.stages import Fit, Gate, fit_in_place_of_leaves, gate_by_model


# Stages with one idea of the shipped ones taken out, each replacing its stage in a variant.
async def keep_all(
    llm: LanguageModel, query: Query, complexity: Complexity, candidates: list[RecalledMemory]
) -> tuple[list[RecalledMemory], bool]:
    """No gate: every candidate goes on, and no language model is asked."""
    return candidates, False


def fit_untrimmed(
    query: Query, memories: Sequence[RecalledMemory], max_tokens: int, summary_share: float
) -> tuple[list[RecalledMemory], int]:
    """Summaries in place of leaves, returned whole."""
    return fit_tokens(memories, leaf_spend(memories, max_tokens), summary_share)


def fit_unfocused(
    query: Query, memories: Sequence[RecalledMemory], max_tokens: int, summary_share: float
) -> tuple[list[RecalledMemory], int]:
    """The shipped fit, but summaries keep their facts off the query's terms."""
    budget = leaf_spend(memories, max_tokens)
    return fit_without_repeats(memories, budget, summary_share, None, query.asks_when)


def fit_undated(
    query: Query, memories: Sequence[RecalledMemory], max_tokens: int, summary_share: float
) -> tuple[list[RecalledMemory], int]:
    """The shipped fit, but a fact dating a relative time goes like any repeat."""
    budget = leaf_spend(memories, max_tokens)
    return fit_without_repeats(memories, budget, summary_share, query, False)


def fit_beside_leaves(
    query: Query, memories: Sequence[RecalledMemory], max_tokens: int, summary_share: float
) -> tuple[list[RecalledMemory], int]:
    """The shipped fit, but summaries take what the leaves leave of the budget too."""
    return fit_without_repeats(memories, max_tokens, summary_share, query, query.asks_when)


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    options: RecallOptions = field(default_factory=RecallOptions)
    gate: Gate = gate_by_model
    fit: Fit = fit_in_place_of_leaves
    complexity: RequestedComplexity = "auto"
    max_tokens: int | None = None  # None: the options' default_max_tokens, as served
    # Write path: None segments by exchange, as deployed (in LoCoMo, where two people talk,
    # every message is a segment); a number pins segments to that many messages, whoever
    # speaks.
    segment_messages: int | None = None
    # A point of the token curve (curve.py): the variant with `max_tokens` at this budget.
    budget: int | None = None
    # Recall reads the entity index (the eval's stack always writes it); False: recall as
    # with the knowledge write off.
    entities: bool = True

    @property
    def method(self) -> str:
        return f"memstream:{self.name}"

    @property
    def segmentation(self) -> str:
        return "exchange" if self.segment_messages is None else f"seg{self.segment_messages}"

    @property
    def fingerprint(self) -> str:
        # repr of frozen dataclasses (with their mapping-proxy budgets) is deterministic; a
        # stage is named by its function's name.
        stages = tuple(getattr(s, "__name__", repr(s)) for s in (self.gate, self.fit))
        spec = repr(
            (
                self.options,
                stages,
                self.complexity,
                self.max_tokens,
                self.segment_messages,
                self.entities,
            )
        )
        return hashlib.sha256(spec.encode()).hexdigest()[:16]


def _budgets(leaves: int, **levels: int) -> dict[Complexity, dict[Level, int]]:
    """The same level budgets for every complexity."""
    per_level = {Level.SEGMENT: leaves} | {Level[name.upper()]: n for name, n in levels.items()}
    return {c: dict(per_level) for c in COMPLEXITIES}


SHIPPED = RecallOptions()
# TiMem's recall as DESIGN.md describes it: dense-heavy fusion, 20 leaves, no re-ranking,
# one budget for every question, every level competing for it by score.
TIMEM = RecallOptions(
    leaf_top_k=20,
    leaf_pool=0,
    dense_weight=0.9,
    speaker_boost=0.0,
    time_boost=0.0,
    focused_share=1.0,
    summary_share=1.0,
    budgets={
        "simple": {Level.SEGMENT: 20, Level.SESSION: 4, Level.MONTH: 1},
        "hybrid": {Level.SEGMENT: 20, Level.SESSION: 4, Level.DAY: 2, Level.MONTH: 1},
        "complex": {
            Level.SEGMENT: 20,
            Level.SESSION: 8,
            Level.DAY: 4,
            Level.WEEK: 2,
            Level.MONTH: 1,
        },
    },
)
BUDGET = 600  # the bar: recalled tokens per query, on average

VARIANTS: tuple[Variant, ...] = (
    Variant("default", "memstream as shipped: RecallOptions() and the service token ceiling"),
    Variant(
        "timem-600",
        "TiMem's recall as in DESIGN.md (0.9 dense, 20 leaves, no re-ranking) at 600 tokens",
        options=TIMEM,
        max_tokens=BUDGET,
    ),
    # Each idea of the default taken out alone.
    Variant(
        "no-lexical",
        "default with the dense-heavy fusion of DESIGN.md (dense_weight 0.9, not 0.5)",
        options=replace(SHIPPED, dense_weight=0.9),
    ),
    Variant(
        "no-speaker",
        "default without the speaker bonus (+0.2 to what the one person named said)",
        options=replace(SHIPPED, speaker_boost=0.0),
    ),
    Variant(
        "no-time",
        "default without time expressions resolved to a range (TSM; +0.1 inside it)",
        options=replace(SHIPPED, time_boost=0.0),
    ),
    Variant(
        "no-focus",
        "default with one budget for every question (600 tokens) instead of 450 for "
        "single-fact questions and 1200 for those gathering facts",
        options=replace(SHIPPED, focused_share=1.0),
        max_tokens=BUDGET,
    ),
    Variant(
        "no-summaries",
        "default recalling L1 leaves only: what the summaries' tokens cost in evidence",
        options=replace(SHIPPED, budgets=_budgets(LEAVES)),
    ),
    Variant(
        "no-trim",
        "default with summaries returned whole, repeating what the leaves beside them say",
        fit=fit_untrimmed,
    ),
    Variant(
        "no-query-facts",
        "default with summaries trimmed of repeats only, not of facts off the query's terms",
        fit=fit_unfocused,
    ),
    Variant(
        "no-dated-repeats",
        "default with summary facts that date a relative time trimmed like any repeat of a "
        "returned leaf, also for questions asking when",
        fit=fit_undated,
    ),
    Variant(
        "no-signal",
        "default without the summary signal (+0.03 x share of the query's terms the session "
        "summary above a leaf holds)",
        options=replace(SHIPPED, summary_signal=0.0),
    ),
    Variant(
        "no-replace",
        "default with summaries added in what the leaves leave of the budget, not only in "
        "place of leaves",
        fit=fit_beside_leaves,
    ),
    Variant(
        "no-entities",
        "default without the entity index in recall (no heat bonus, no joined leaves), as "
        "with the knowledge write off; the aggregation widening stays",
        entities=False,
    ),
    Variant(
        "no-widening",
        "default keeping leaf_top_k leaves for a question gathering facts too (not 50 more)",
        options=replace(SHIPPED, aggregate_leaves=0),
    ),
    Variant(
        "pool-60",
        "default re-ranking 60 candidates instead of 100",
        options=replace(SHIPPED, leaf_pool=60),
    ),
    Variant(
        "no-gate",
        "default without the offline relevance gate",
        gate=keep_all,
    ),
    Variant(
        "no-gate-fill",
        "default returning only what the offline gate kept of a question gathering facts, "
        "the rest of its budget unspent (gate_fill off)",
        options=replace(SHIPPED, gate_fill=False),
    ),
    Variant(
        "seg2",
        "default on two-message segments (count segmentation) instead of one per exchange",
        segment_messages=2,
    ),
    # Ideas measured and not kept.
    Variant(
        "+session",
        "default + session support: +0.05 x summed score of the other leaves of the session",
        options=replace(SHIPPED, session_support=0.05),
    ),
    Variant(
        "+spread",
        "default + session spread for questions gathering facts: past 3 leaves of a session, "
        "-0.02 per further leaf",
        options=replace(SHIPPED, spread_per_session=3, spread_penalty=0.02),
    ),
    Variant(
        "+summary-share",
        "default with every level competing for the whole budget by score (summary_share 1)",
        options=replace(SHIPPED, summary_share=1.0),
    ),
)

PRIMARY = "default"


def at_budget(variant: Variant, budget: int) -> Variant:
    """`variant` with its token ceiling at `budget`: a point of the token curve."""
    if budget <= 0:
        raise ValueError("a token budget must be positive")
    return replace(
        variant,
        name=f"{variant.name}@{budget}tok",
        description=f"{variant.name} with max_tokens {budget} (the token curve)",
        max_tokens=budget,
        budget=budget,
    )


def curve_variants(budgets: Sequence[int]) -> list[Variant]:
    """The primary variant at each budget."""
    primary = next(v for v in VARIANTS if v.name == PRIMARY)
    return [at_budget(primary, b) for b in budgets]


def select(names: list[str] | None) -> list[Variant]:
    """The named variants in catalogue order (all of them when `names` is None)."""
    if names is None:
        return list(VARIANTS)
    known = {v.name: v for v in VARIANTS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown variants {unknown}; known: {sorted(known)}")
    return [v for v in VARIANTS if v.name in names]
