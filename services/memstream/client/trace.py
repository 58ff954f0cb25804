"""Recall, explained, as typed objects: `recall(..., explain=True).trace`.

The same fields as the API's `RecallTrace` (a test holds them to the served OpenAPI);
docs/recall-explained.md says how to read them.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class TraceTimeRange(_Answer):
    start: datetime
    end: datetime  # exclusive


class TracePlan(_Answer):
    """What the planner decided: how deep to climb, which words and entities matter."""

    complexity: str
    keywords: list[str]
    levels: list[int]
    state_question: bool
    query_time: datetime | None
    time_range: TraceTimeRange | None
    entities: list[str]
    top_k: int
    pool: int


class TraceLeaf(_Answer):
    """One leaf of the re-ranked pool: its scores, its rank, and whether it was returned."""

    id: str
    level: int
    t_start: datetime
    t_end: datetime
    text: str
    dense: float | None = None
    lexical: float | None = None
    fused: float | None
    rerank: float | None
    rank: int
    source: str
    returned: bool
    entities: list[str] = []  # the query's entities it names


class TraceClimb(_Answer):
    """An ancestor climbed to, from the recalled leaves below it."""

    id: str
    level: int
    from_ids: list[str]
    returned: bool


class TraceDrop(_Answer):
    """A memory a stage left out ("top_k", "level_budget", "gate", "budget"), and why."""

    id: str
    level: int
    stage: str
    reason: str


class TraceFact(_Answer):
    fact_id: str
    text: str
    valid_from: datetime
    valid_to: datetime | None


class RecallTrace(_Answer):
    """What each stage of one recall saw, kept and left out."""

    plan: TracePlan
    leaves: list[TraceLeaf]
    climbed: list[TraceClimb]
    dropped: list[TraceDrop]
    facts: list[TraceFact]
    tokens: int
    max_tokens: int
    timings_ms: dict[str, float]
