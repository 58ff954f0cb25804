"""Recall tunables: leaf depth and re-ranking, channel weight, level budgets, token shares.

The backbone follows DESIGN.md and TiMem's recall configuration (appendix B.3). Where the
defaults differ from it, the LoCoMo evaluation measured why (docs/figures/memory-quality.md):

- leaves are fused with `dense_weight` 0.5 rather than 0.9 (names, places and dates are
  what questions share with their evidence, and the lexical channel sees them);
- a deeper pool of `leaf_pool` candidates is re-ranked with the speaker and time bonuses
  of `domain/rerank.py` before the best `leaf_top_k` go on;
- a question after one fact gets `focused_share` of the token budget, a question that
  gathers facts from across the history the whole of it (`domain/cues.py`); a ceiling above
  `default_max_tokens` is spent by every question, and the counts above, tuned at the
  default ceiling, grow in proportion to it (`at_ceiling`), the candidates searched
  `ceiling_pool` times faster: a caller asking for more tokens gets the next-best memories,
  not the default's answer with the rest left unspent; there the gate is not asked
  (`ceiling_gate`) and, past `excerpt_growth_from` times the default, excerpts lengthen
  (`excerpt_growth`);
- memories are fitted to the budget best first, but summaries (L2-L5) may take only
  `summary_share` of it in that pass, so the leaves, which carry the evidence, are not
  crowded out by their own ancestors; summaries then take whatever the leaves leave;
- a summary returned beside leaves carries only the facts they do not, and only those
  sharing a term with the query; summaries take the place of the weakest leaves rather than
  adding to them (both are the pipeline's fit stage, `recall/stages.py`);
- a leaf is lifted by the share of the query's terms its session summary holds
  (`summary_signal`), so the tree helps find leaves, not only follows them;
- with the entity index (knowledge on), up to `entity_join` leaves of the entities the query
  names (found among the newest `entity_join_scan` of each) join a pool that lacks them,
  and a leaf is lifted by `entity_heat` times the rarity of each of them it names; a
  question gathering facts keeps `aggregate_leaves` more leaves (its token budget, not the
  leaf count, then decides), may search `aggregate_pool` candidates and may spread what it
  keeps across sessions (`spread_*`, off); past its `aggregate_whole_leaves` best, its
  leaves come as excerpts of `aggregate_leaf_tokens`, so the budget holds more of the
  sessions where the facts were said; a question after one fact, past its
  `focused_whole_leaves` best, gets excerpts of `focused_leaf_tokens`, so its smaller budget
  holds more of the leaves that may answer it;
- for a question gathering facts the gate decides what comes first, the budget how much
  (`gate_fill`): what the gate left out fills what the memories it kept leave, after them,
  so facts told in words the question does not share still reach the budget.

Everything is a frozen value so the evaluation builds variants with `dataclasses.replace`
and measures each idea alone; an idea that is a stage rather than a number (the gate, the
fit) is taken out by replacing the stage (memstream_lab/eval/variants.py). These are also the
deployment's defaults: `Settings` takes its `recall` group's defaults from here and builds the
options with `settings.recall.options()`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal

from memstream.domain.models import COMPLEXITIES, Complexity, Level

AncestorScoring = Literal["max", "sum"]

# How many memories of each level a query of each complexity may recall. A level missing
# from a complexity's budget is not recalled at all (simple queries skip days and weeks).
LEAVES = 35
DEFAULT_BUDGETS: Mapping[Complexity, Mapping[Level, int]] = MappingProxyType(
    {
        "simple": MappingProxyType({Level.SEGMENT: LEAVES, Level.SESSION: 4, Level.MONTH: 1}),
        "hybrid": MappingProxyType(
            {Level.SEGMENT: LEAVES, Level.SESSION: 4, Level.DAY: 2, Level.MONTH: 1}
        ),
        "complex": MappingProxyType(
            {Level.SEGMENT: LEAVES, Level.SESSION: 8, Level.DAY: 4, Level.WEEK: 2, Level.MONTH: 1}
        ),
    }
)


@dataclass(frozen=True)
class RecallOptions:
    """How recall behaves; the defaults are the production configuration.

    `ancestor_scoring` decides what an ancestor is worth: "max" (default) is the best score
    among the recalled leaves below it, so ancestor and leaf scores share one scale; ties
    go to the ancestor with more recalled leaves below it. "sum" adds the leaves' scores
    instead, which favours broad ancestors over precise ones (an ablation knob).
    """

    leaf_top_k: int = LEAVES
    dense_weight: float = 0.5
    budgets: Mapping[Complexity, Mapping[Level, int]] = field(
        default_factory=lambda: DEFAULT_BUDGETS
    )
    ancestor_scoring: AncestorScoring = "max"
    # Leaf re-ranking (domain/rerank.py); a pool no deeper than leaf_top_k still re-ranks.
    leaf_pool: int = 100
    speaker_boost: float = 0.2  # the query names one person: what that person said
    time_boost: float = 0.1  # inside the time range the query names (TSM)
    time_pad_days: float = 3.0  # a thing is often told a few days after it happened
    session_support: float = 0.0  # times the other candidates' score in the same session
    summary_signal: float = 0.03  # times the share of the query's terms the session summary holds
    # Token budget.
    default_max_tokens: int = 1200  # the ceiling when a request names none
    focused_share: float = 0.375  # of max_tokens, for a question after one fact
    # Of the budget L2-L5 may take while leaves still fit. 0.15, not 0.2: on the dev split,
    # over one ingest, evidence recall 0.701 against 0.695 and answer coverage 0.757 against
    # 0.761 (no summaries: 0.708 and 0.737); 0.2 left evidence recall on its bar.
    summary_share: float = 0.15
    # Entities and aggregation (docs/knowledge.md, "Entities in recall": each value chosen
    # leaving one LoCoMo conversation out, scored on it).
    entity_heat: float = 0.05  # times the rarity of each query entity a leaf names
    entity_join: int = 20  # leaves of the query's entities joining the pool, at most
    # The join looks at the newest this many leaves of each entity (docs/scaling.md): more
    # than any LoCoMo conversation has, so a heavy user's friend named in thousands of
    # leaves costs a question what a LoCoMo speaker does.
    entity_join_scan: int = 1_000
    # Candidates searched for a question gathering facts: 200 since the gate fill spends
    # what the gate leaves (before it, the held-out folds split between 100 and 200).
    aggregate_pool: int = 200
    aggregate_leaves: int = 50  # leaves kept beyond leaf_top_k for a question gathering facts
    # Off: spreading what is kept across sessions lost evidence in every held-out fold.
    spread_per_session: int = 2  # leaves of one session before the spread penalty
    spread_penalty: float = 0.0  # times the leaf's place past them in its session
    # Past its `aggregate_whole_leaves` best, a leaf of a question gathering facts longer
    # than `aggregate_leaf_tokens` comes as an excerpt around the query's terms
    # (domain/excerpt.py), so more distinct leaves fit its budget (docs/figures/
    # memory-quality.md, "This session: multi-hop"); aggregate_leaf_tokens 0: all whole.
    aggregate_leaf_tokens: int = 32
    # 6, not 18, since the gate fill and the wider pool (docs/figures/memory-quality.md,
    # "Gate fill": four held-out folds of five chose it, the fifth the code before).
    aggregate_whole_leaves: int = 6
    # The same for a question after one fact: past its `focused_whole_leaves` best, its leaves
    # come as excerpts of `focused_leaf_tokens` (chosen leaving one LoCoMo conversation out:
    # every fold chose 40 and 3; docs/figures/memory-quality.md, 29 Nov); 0: all whole.
    focused_leaf_tokens: int = 40
    focused_whole_leaves: int = 3
    # A ceiling above `default_max_tokens` is spent (`at_ceiling`, `token_budget`); off, it
    # buys what the default does (an ablation knob).
    ceiling_scaling: bool = True
    # For a question gathering facts, what the gate left out fills what the memories it
    # kept leave of the budget, after them, at any ceiling (`fills_after_gate`): the offline
    # gate keeps the leaves sharing a discriminating term with the question, and the facts
    # told in other words were left out with budget to spare. Not for a question after one
    # fact: what shares none of its terms adds values it does not ask for, an older value
    # of a changing fact among them (docs/figures/memory-quality.md, "Gate fill").
    gate_fill: bool = True
    # Above the default ceiling, the candidates searched grow this many times faster than
    # the ceiling: the room added is spent on leaves the re-rank lifts from deeper in the
    # fused ranking (the speaker, time and entity bonuses), which a pool grown only in
    # proportion does not reach (chosen leaving one LoCoMo conversation out;
    # docs/figures/memory-quality.md, "Above the default ceiling").
    ceiling_pool: float = 2.0
    # Above the default ceiling the gate is not asked: every candidate climbed goes to the
    # fit in score order. There the gate only ordered (what it left out filled after what
    # it kept), and that order put a leaf it kept for one shared word, however deep, before
    # a better-ranked leaf told in other words; the re-rank's order keeps more evidence
    # (chosen leaving one LoCoMo conversation out; docs/figures/ceiling.md). True: the gate
    # orders above the default too, as it did before.
    ceiling_gate: bool = False
    # Past `excerpt_growth_from` times the default ceiling, the excerpts of leaves past the
    # whole ones lengthen with the ceiling's ratio to that point to the power
    # `excerpt_growth`: up to it a ceiling is still short of distinct leaves, and its room
    # is best spent on more of them; beyond it, on more of each one's words (an excerpt cut
    # to its best passage loses the answer told in the sentence next to it). 0: excerpts
    # keep the default's length at any ceiling (chosen leaving one conversation out, as
    # above).
    excerpt_growth_from: float = 1.5
    excerpt_growth: float = 0.75

    def __post_init__(self) -> None:
        if self.leaf_top_k <= 0:
            raise ValueError("leaf_top_k must be positive")
        if self.default_max_tokens < 0:
            raise ValueError("default_max_tokens must not be negative")
        for name in (
            "leaf_pool",
            "entity_join",
            "entity_join_scan",
            "aggregate_pool",
            "aggregate_leaves",
            "spread_per_session",
            "aggregate_leaf_tokens",
            "aggregate_whole_leaves",
            "focused_leaf_tokens",
            "focused_whole_leaves",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        if self.ceiling_pool < 1.0:
            raise ValueError("ceiling_pool must be at least 1")
        if self.excerpt_growth_from < 1.0:
            raise ValueError("excerpt_growth_from must be at least 1")
        if self.excerpt_growth < 0:
            raise ValueError("excerpt_growth must not be negative")
        if self.entity_heat < 0 or self.spread_penalty < 0:
            raise ValueError("entity_heat and spread_penalty must not be negative")
        for name in ("dense_weight", "focused_share", "summary_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1]")
        missing = set(COMPLEXITIES) - set(self.budgets)
        if missing:
            raise ValueError(f"budgets lack complexities {sorted(missing)}")
        if any(n < 0 for per_level in self.budgets.values() for n in per_level.values()):
            raise ValueError("budgets must not be negative")

    @property
    def candidates(self) -> int:
        """How many leaves to fetch from the index before re-ranking."""
        return max(self.leaf_pool, self.leaf_top_k)

    def candidates_for(self, aggregative: bool) -> int:
        """How many leaves to fetch for a query: a wider pool when it gathers facts."""
        if not aggregative:
            return self.candidates
        return max(self.candidates, self.aggregate_pool, self.leaves_for(aggregative))

    def leaves_for(self, aggregative: bool) -> int:
        """How many re-ranked leaves go on: more when the query gathers facts."""
        return self.leaf_top_k + (self.aggregate_leaves if aggregative else 0)

    def levels(self, complexity: Complexity, aggregative: bool = False) -> dict[Level, int]:
        """The levels a complexity recalls, with their budgets (zero budgets left out); a
        query gathering facts may keep `aggregate_leaves` more leaves."""
        budgets = {level: n for level, n in sorted(self.budgets[complexity].items()) if n > 0}
        if aggregative and Level.SEGMENT in budgets:
            budgets[Level.SEGMENT] += self.aggregate_leaves
        return budgets

    def token_budget(self, max_tokens: int, aggregative: bool) -> int:
        """What a query may spend: all of `max_tokens` when it gathers facts or the ceiling is
        above the default (the caller asked for more than the default's lean answer), else
        `focused_share` of it."""
        if aggregative or self.fills(max_tokens):
            return max_tokens
        return int(max_tokens * self.focused_share)

    def excerpts(self, aggregative: bool) -> tuple[int, int] | None:
        """How the leaves past the best come, as excerpts: (tokens an excerpt, leaves kept
        whole) for a gathering question, or for one after one fact when excerpts are on;
        None: every leaf whole."""
        if aggregative:
            return self.aggregate_leaf_tokens, self.aggregate_whole_leaves
        if self.focused_leaf_tokens:
            return self.focused_leaf_tokens, self.focused_whole_leaves
        return None

    def fills(self, max_tokens: int) -> bool:
        """Whether a ceiling is above the default: then every question spends it, the counts
        grow with it (`at_ceiling`) and what the gate left out fills what its memories
        leave."""
        return self.ceiling_scaling and max_tokens > self.default_max_tokens

    def gates(self, max_tokens: int) -> bool:
        """Whether the gate is asked: up to the default ceiling, and above it with
        `ceiling_gate`; else the fit takes every candidate in score order."""
        return self.ceiling_gate or not self.fills(max_tokens)

    def fills_after_gate(self, max_tokens: int, aggregative: bool) -> bool:
        """Whether what the gate left out fills what the memories it kept leave of the
        budget: above the default ceiling (`fills`), and with `gate_fill` for a question
        gathering facts."""
        return self.fills(max_tokens) or (self.gate_fill and aggregative)

    def at_ceiling(self, max_tokens: int) -> RecallOptions:
        """The options for a request's token ceiling. Up to `default_max_tokens`, these;
        above it, every count the default ceiling was tuned with (leaves kept and searched,
        each level's memories, the entity join, the whole leaves of a gathering question)
        grows in proportion to the ceiling, the candidates searched `ceiling_pool` times
        faster, so the tokens it adds are spent on the next-best material rather than left
        unspent where the default's counts stop."""
        if not self.fills(max_tokens) or self.default_max_tokens <= 0:
            return self
        ratio = max_tokens / self.default_max_tokens

        def grow(n: int, faster: float = 1.0) -> int:
            return math.ceil(n * ratio * faster)

        longer = max(1.0, ratio / self.excerpt_growth_from) ** self.excerpt_growth
        budgets = {
            c: MappingProxyType({level: grow(n) for level, n in per.items()})
            for c, per in self.budgets.items()
        }
        return replace(
            self,
            leaf_top_k=grow(self.leaf_top_k),
            leaf_pool=grow(self.leaf_pool, self.ceiling_pool),
            budgets=MappingProxyType(budgets),
            entity_join=grow(self.entity_join),
            aggregate_pool=grow(self.aggregate_pool, self.ceiling_pool),
            aggregate_leaves=grow(self.aggregate_leaves),
            aggregate_whole_leaves=grow(self.aggregate_whole_leaves),
            focused_whole_leaves=grow(self.focused_whole_leaves),
            aggregate_leaf_tokens=math.ceil(self.aggregate_leaf_tokens * longer),
            focused_leaf_tokens=math.ceil(self.focused_leaf_tokens * longer),
        )
