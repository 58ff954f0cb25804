"""Recall, explained (`POST /v1/recall` with `explain: true`): the trace's answer schema.

Each model mirrors one value of `memstream.recall.trace` and says how it reads; the SDK
parses the same JSON into its own types (`memstream.client.trace`).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from memstream.domain.facts import AtomicFact
from memstream.recall import trace as recall

__all__ = ["RecallTrace"]


class TraceTimeRange(BaseModel):
    start: datetime
    end: datetime = Field(description="Exclusive.")


class TracePlan(BaseModel):
    complexity: str = Field(description="How much of the tree the planner chose to climb.")
    keywords: list[str]
    levels: list[int] = Field(description="The levels recalled for this complexity.")
    state_question: bool = Field(description="The query asks for the state of a changing fact.")
    query_time: datetime | None = Field(description="As asked; null: now.")
    time_range: TraceTimeRange | None = Field(description="The time the query names, if any.")
    entities: list[str] = Field(description="Entity keys the query names (knowledge on).")
    top_k: int = Field(ge=0, description="How many re-ranked leaves went on to the climb.")
    pool: int = Field(ge=0, description="How many leaves the index search returned.")

    @classmethod
    def of(cls, plan: recall.PlanTrace) -> TracePlan:
        time_range = plan.time_range
        return cls(
            complexity=plan.complexity,
            keywords=list(plan.keywords),
            levels=list(plan.levels),
            state_question=plan.state_question,
            query_time=plan.query_time,
            time_range=TraceTimeRange(start=time_range[0], end=time_range[1])
            if time_range
            else None,
            entities=list(plan.entities),
            top_k=plan.top_k,
            pool=plan.pool,
        )


class TraceLeaf(BaseModel):
    id: str
    level: int
    t_start: datetime
    t_end: datetime
    text: str
    dense: float | None = Field(
        default=None,
        description="Its score in a dense-only search of the same depth; null when it is "
        "not among that search's best.",
    )
    lexical: float | None = Field(
        default=None,
        description="Its saturated lexical score in a lexical-only search, likewise.",
    )
    fused: float | None = Field(
        description="The index's score, dense_weight * dense + (1 - dense_weight) * lexical; "
        "null for a leaf the entity join added."
    )
    rerank: float | None = Field(description="After the re-rank's bonuses.")
    rank: int = Field(ge=1, description="Its place after the re-rank, 1 the best.")
    source: str = Field(
        description='Which single-channel searches rank it among their best: "both", '
        '"dense", "lexical", or "fused" (neither alone); "entity": added by the entity join.'
    )
    returned: bool
    entities: list[str] = Field(
        default_factory=list,
        description="The entities the query names that it names too (the re-rank's heat).",
    )

    @classmethod
    def of(cls, leaf: recall.LeafTrace) -> TraceLeaf:
        node = leaf.node
        return cls(
            id=node.id,
            level=int(node.level),
            t_start=node.t_start,
            t_end=node.t_end,
            text=node.text,
            dense=leaf.dense,
            lexical=leaf.lexical,
            fused=leaf.fused,
            rerank=leaf.rerank,
            rank=leaf.rank,
            source=leaf.source,
            returned=leaf.returned,
            entities=list(leaf.entities),
        )


class TraceClimb(BaseModel):
    id: str
    level: int
    from_ids: list[str] = Field(
        description="The recalled leaves below it; empty for the profile standing in."
    )
    returned: bool

    @classmethod
    def of(cls, climb: recall.ClimbTrace) -> TraceClimb:
        return cls(
            id=climb.node.id,
            level=int(climb.node.level),
            from_ids=list(climb.from_ids),
            returned=climb.returned,
        )


class TraceDrop(BaseModel):
    id: str
    level: int
    stage: str = Field(
        description='"top_k" (re-ranked below the leaves kept), "level_budget" (not among '
        'the best supported of its level), "gate", or "budget" (the token fit).'
    )
    reason: str

    @classmethod
    def of(cls, drop: recall.DropTrace) -> TraceDrop:
        return cls(
            id=drop.node.id, level=int(drop.node.level), stage=drop.stage, reason=drop.reason
        )


class TraceFact(BaseModel):
    fact_id: str
    text: str
    valid_from: datetime
    valid_to: datetime | None

    @classmethod
    def of(cls, fact: AtomicFact) -> TraceFact:
        return cls(
            fact_id=fact.fact_id,
            text=fact.text,
            valid_from=fact.valid_from,
            valid_to=fact.valid_to,
        )


class RecallTrace(BaseModel):
    """What each stage of the recall saw, kept and left out (`docs/recall-explained.md`)."""

    plan: TracePlan
    leaves: list[TraceLeaf] = Field(description="The re-ranked leaf pool, best first.")
    climbed: list[TraceClimb] = Field(description="The ancestors the leaves climbed to.")
    dropped: list[TraceDrop] = Field(description="What a stage left out, and why.")
    facts: list[TraceFact]
    tokens: int = Field(ge=0)
    max_tokens: int = Field(ge=0, description="The ceiling the request named (or the default).")
    timings_ms: dict[str, float]

    @classmethod
    def of(cls, trace: recall.RecallTrace) -> RecallTrace:
        return cls(
            plan=TracePlan.of(trace.plan),
            leaves=[TraceLeaf.of(leaf) for leaf in trace.leaves],
            climbed=[TraceClimb.of(climb) for climb in trace.climbed],
            dropped=[TraceDrop.of(drop) for drop in trace.dropped],
            facts=[TraceFact.of(fact) for fact in trace.facts],
            tokens=trace.tokens,
            max_tokens=trace.max_tokens,
            timings_ms=dict(trace.timings_ms),
        )
