"""Recall, explained: what each stage of one recall saw, kept, and left out.

The pipeline takes a `TraceRecorder` only when the caller asks (`RecallRequest.explain`);
without one every hook is skipped by a None check, so a plain recall does no more work. The
recorder holds references to what the stages computed anyway, and `finish` turns them into
one `RecallTrace` value after the answer is decided.

Scores per leaf: `fused` is what the index gave (dense and lexical fused in one query, so
the two channels are not told apart: `dense` and `lexical` stay None, and `source` says
which channels matched: "both" when the leaf shares a content term with the query, else
"dense"; "entity" for a leaf the entity join added). `rerank` is the score after the re-rank
bonuses (speaker, time, session summary, entity heat).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memstream.domain.facts import AtomicFact
from memstream.domain.lexical import tokenize
from memstream.domain.models import Level, MemoryNode, Plan
from memstream.domain.query import Query
from memstream.domain.ranking import RecalledMemory

__all__ = [
    "ClimbTrace",
    "DropTrace",
    "LeafTrace",
    "PlanTrace",
    "RecallTrace",
    "TraceRecorder",
]


@dataclass(frozen=True, slots=True)
class PlanTrace:
    complexity: str
    keywords: tuple[str, ...]
    levels: tuple[int, ...]
    state_question: bool
    query_time: datetime | None
    time_range: tuple[datetime, datetime] | None
    entities: tuple[str, ...]
    top_k: int
    pool: int


@dataclass(frozen=True, slots=True)
class LeafTrace:
    node: MemoryNode
    fused: float | None
    rerank: float
    rank: int  # 1 for the best re-ranked leaf
    source: str
    returned: bool


@dataclass(frozen=True, slots=True)
class ClimbTrace:
    node: MemoryNode
    from_ids: tuple[str, ...]  # the recalled leaves below it (none: the profile standing in)
    returned: bool


@dataclass(frozen=True, slots=True)
class DropTrace:
    node: MemoryNode
    stage: str  # "top_k", "level_budget", "gate", "budget"
    reason: str


@dataclass(frozen=True, slots=True)
class RecallTrace:
    plan: PlanTrace
    leaves: tuple[LeafTrace, ...]
    climbed: tuple[ClimbTrace, ...]
    dropped: tuple[DropTrace, ...]
    facts: tuple[AtomicFact, ...]
    tokens: int
    max_tokens: int
    timings_ms: Mapping[str, float]


@dataclass
class TraceRecorder:
    """Collects, stage by stage, what `finish` makes into a `RecallTrace`."""

    fused: dict[str, float] = field(default_factory=dict)
    ranked: list[RecalledMemory] = field(default_factory=list)
    top_k: int = 0
    pool_size: int = 0
    entities: tuple[str, ...] = ()
    by_level: dict[Level, list[MemoryNode]] = field(default_factory=dict)
    candidates: list[RecalledMemory] = field(default_factory=list)
    gated: list[RecalledMemory] = field(default_factory=list)
    gate_failed: bool = False
    memories: list[RecalledMemory] = field(default_factory=list)
    facts: tuple[AtomicFact, ...] = ()
    tokens: int = 0
    max_tokens: int = 0
    budget: int = 0

    def leaves_ranked(
        self,
        fused: Mapping[str, float],
        ranked: list[RecalledMemory],
        top_k: int,
        pool_size: int,
        entities: Iterable[str],
    ) -> None:
        self.fused = dict(fused)
        self.ranked = ranked
        self.top_k = top_k
        self.pool_size = pool_size
        self.entities = tuple(entities)

    def climbed(self, by_level: dict[Level, list[MemoryNode]]) -> None:
        self.by_level = by_level

    def gate(
        self, candidates: list[RecalledMemory], kept: list[RecalledMemory], failed: bool
    ) -> None:
        self.candidates, self.gated, self.gate_failed = candidates, kept, failed

    def fitted(
        self,
        memories: Sequence[RecalledMemory],
        facts: Sequence[AtomicFact],
        tokens: int,
        max_tokens: int,
        budget: int,
    ) -> None:
        self.memories, self.facts = list(memories), tuple(facts)
        self.tokens, self.max_tokens, self.budget = tokens, max_tokens, budget

    def finish(
        self,
        query: Query,
        plan: Plan,
        budgets: Mapping[Level, int],
        query_time: datetime | None,
        timings_ms: Mapping[str, float],
    ) -> RecallTrace:
        returned = {m.node.id for m in self.memories}
        time_range = query.time_range
        return RecallTrace(
            plan=PlanTrace(
                complexity=plan.complexity,
                keywords=plan.keywords,
                levels=tuple(int(level) for level in budgets),
                state_question=query.state is not None,
                query_time=query_time,
                time_range=(time_range.start, time_range.end) if time_range else None,
                entities=self.entities,
                top_k=self.top_k,
                pool=self.pool_size,
            ),
            leaves=tuple(self._leaves(query, returned)),
            climbed=tuple(self._climbed(returned)),
            dropped=tuple(self._dropped(budgets, returned)),
            facts=self.facts,
            tokens=self.tokens,
            max_tokens=self.max_tokens,
            timings_ms=dict(timings_ms),
        )

    # --- the parts of the trace --------------------------------------------------------

    def _leaves(self, query: Query, returned: set[str]) -> Iterable[LeafTrace]:
        terms = query.term_set
        for rank, memory in enumerate(self.ranked, start=1):
            node = memory.node
            fused = self.fused.get(node.id)
            if fused is None:
                source = "entity"
            else:
                source = "both" if terms.intersection(tokenize(node.text)) else "dense"
            yield LeafTrace(node, fused, memory.score, rank, source, node.id in returned)

    def _below(self) -> dict[str, set[str]]:
        """Each climbed node's id -> the recalled leaves below it."""
        below = {n.id: {n.id} for n in self.by_level.get(Level.SEGMENT, [])}
        for level in sorted(self.by_level):
            for node in self.by_level[level]:
                if node.parent_id is not None and node.id in below:
                    below.setdefault(node.parent_id, set()).update(below[node.id])
        return below

    def _climbed(self, returned: set[str]) -> Iterable[ClimbTrace]:
        below = self._below()
        seen: set[str] = set()
        ancestors = [
            n
            for level in sorted(self.by_level)
            if level > Level.SEGMENT
            for n in self.by_level[level]
        ]
        # The profile standing in when no path reached a month is a candidate, not climbed to.
        ancestors += [m.node for m in self.candidates if m.node.level > Level.SEGMENT]
        for node in ancestors:
            if node.id in seen:
                continue
            seen.add(node.id)
            yield ClimbTrace(node, tuple(sorted(below.get(node.id, ()))), node.id in returned)

    def _dropped(self, budgets: Mapping[Level, int], returned: set[str]) -> Iterable[DropTrace]:
        for rank, memory in enumerate(self.ranked[self.top_k :], start=self.top_k + 1):
            reason = f"ranked {rank}, after the {self.top_k} leaves kept"
            yield DropTrace(memory.node, "top_k", reason)
        candidate_ids = {m.node.id for m in self.candidates}
        for level in sorted(self.by_level):
            for node in self.by_level[level]:
                if node.id in candidate_ids:
                    continue
                if level not in budgets:
                    reason = f"level {int(level)} is not recalled for this plan"
                else:
                    reason = f"not among the {budgets[level]} best supported of level {int(level)}"
                yield DropTrace(node, "level_budget", reason)
        gated_ids = {m.node.id for m in self.gated}
        for memory in self.candidates:
            if memory.node.id not in gated_ids:
                yield DropTrace(memory.node, "gate", "the gate judged it no help for the query")
        for memory in self.gated:
            if memory.node.id not in returned:
                reason = (
                    f"left out by the token fit: over the {self.budget} tokens left, "
                    "or saying only what the memories returned say"
                )
                yield DropTrace(memory.node, "budget", reason)
