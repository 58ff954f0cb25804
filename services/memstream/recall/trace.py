"""Recall, explained: what each stage of one recall saw, kept, and left out.

The pipeline takes a `TraceRecorder` only when the caller asks (`RecallRequest.explain`);
without one every hook is skipped by a None check, so a plain recall does no more work. The
recorder holds references to what the stages computed anyway, and `finish` turns them into
one `RecallTrace` value after the answer is decided.

Scores per leaf: `fused` is what the index gave, `dense_weight * dense + (1 - dense_weight)
* lexical`. The channels are read by two more searches of the same depth, one per channel
(dense weight 1, then 0), run beside the fused one: a leaf among a channel's best has its
score there, else None. `source` says which channels' best hold the leaf ("both", "dense",
"lexical"; "fused" when neither alone ranks it that high; "entity" for a leaf the entity
join added). `rerank` is the score after the re-rank bonuses (speaker, time, session
summary, entity heat).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memstream.domain.facts import AtomicFact
from memstream.domain.models import Level, MemoryNode, Plan, ScoredId, SparseVector
from memstream.domain.query import Query
from memstream.domain.ranking import RecalledMemory
from memstream.domain.rerank import EntityHeat
from memstream.ports import VectorIndex

__all__ = [
    "ClimbTrace",
    "DropTrace",
    "LeafTrace",
    "PlanTrace",
    "RecallTrace",
    "TraceRecorder",
]

log = logging.getLogger(__name__)


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
    dense: float | None
    lexical: float | None
    fused: float | None
    rerank: float
    rank: int  # 1 for the best re-ranked leaf
    source: str
    returned: bool
    entities: tuple[str, ...] = ()  # the entities it names that the query names (the heat)


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
    channels: asyncio.Future[tuple[list[ScoredId], list[ScoredId]]] | None = None
    ranked: list[RecalledMemory] = field(default_factory=list)
    top_k: int = 0
    pool_size: int = 0
    entities: tuple[str, ...] = ()
    heat: EntityHeat = field(default_factory=EntityHeat)
    by_level: dict[Level, list[MemoryNode]] = field(default_factory=dict)
    candidates: list[RecalledMemory] = field(default_factory=list)
    gated: list[RecalledMemory] = field(default_factory=list)
    gate_failed: bool = False
    memories: list[RecalledMemory] = field(default_factory=list)
    facts: tuple[AtomicFact, ...] = ()
    tokens: int = 0
    max_tokens: int = 0
    budget: int = 0

    def search_channels(
        self,
        index: VectorIndex,
        user_id: str,
        dense: Sequence[float],
        sparse: SparseVector,
        limit: int,
    ) -> None:
        """Start the two single-channel searches (read by `finish`)."""

        async def search(weight: float) -> list[ScoredId]:
            return await index.search_leaves(
                user_id, dense, sparse, limit=limit, dense_weight=weight, level=Level.SEGMENT
            )

        self.channels = asyncio.ensure_future(asyncio.gather(search(1.0), search(0.0)))
        # A recall that fails before `finish` leaves them unread: not an unretrieved error.
        self.channels.add_done_callback(lambda done: done.cancelled() or done.exception())

    def leaves_ranked(
        self,
        fused: Mapping[str, float],
        ranked: list[RecalledMemory],
        top_k: int,
        pool_size: int,
        heat: EntityHeat | None,
    ) -> None:
        self.fused = dict(fused)
        self.ranked = ranked
        self.top_k = top_k
        self.pool_size = pool_size
        self.heat = heat or EntityHeat()
        self.entities = tuple(self.heat.weights)

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

    async def finish(
        self,
        query: Query,
        plan: Plan,
        budgets: Mapping[Level, int],
        query_time: datetime | None,
        timings_ms: Mapping[str, float],
    ) -> RecallTrace:
        returned = {m.node.id for m in self.memories}
        time_range = query.time_range
        dense, lexical = await self._channel_scores()
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
            leaves=tuple(self._leaves(returned, dense, lexical)),
            climbed=tuple(self._climbed(returned)),
            dropped=tuple(self._dropped(budgets, returned)),
            facts=self.facts,
            tokens=self.tokens,
            max_tokens=self.max_tokens,
            timings_ms=dict(timings_ms),
        )

    # --- the parts of the trace --------------------------------------------------------

    async def _channel_scores(self) -> tuple[dict[str, float], dict[str, float]]:
        """Each leaf's score in the dense and in the lexical search, where it ranks."""
        if self.channels is None:
            return {}, {}
        try:
            dense, lexical = await self.channels
        except Exception:
            # The answer stands without them: the trace shows the channels as unknown.
            log.warning("the per-channel searches of an explained recall failed", exc_info=True)
            return {}, {}
        return {h.id: h.score for h in dense}, {h.id: h.score for h in lexical}

    def _leaves(
        self, returned: set[str], dense: Mapping[str, float], lexical: Mapping[str, float]
    ) -> Iterable[LeafTrace]:
        for rank, memory in enumerate(self.ranked, start=1):
            i = memory.node.id
            found = (i in dense, i in lexical)
            source = _SOURCES[found] if i in self.fused else "entity"
            scores = (dense.get(i), lexical.get(i), self.fused.get(i))
            named = tuple(k for k in self.heat.leaf_keys.get(i, ()) if k in self.heat.weights)
            yield LeafTrace(
                memory.node,
                *scores,
                memory.score,
                rank,
                source,
                i in returned,
                tuple(sorted(named)),
            )

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
            # Above the default ceiling what the gate left out may fill the budget's rest.
            if memory.node.id not in gated_ids and memory.node.id not in returned:
                yield DropTrace(memory.node, "gate", "the gate judged it no help for the query")
        for memory in self.gated:
            if memory.node.id not in returned:
                reason = (
                    f"left out by the token fit: over the {self.budget} tokens left, "
                    "or saying only what the memories returned say"
                )
                yield DropTrace(memory.node, "budget", reason)


_SOURCES = {
    (True, True): "both",
    (True, False): "dense",
    (False, True): "lexical",
    (False, False): "fused",
}
