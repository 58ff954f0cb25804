"""The recall API's answers as typed objects (a test holds them to the served OpenAPI).

Unknown fields are ignored, so a newer server does not break an older client.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memstream.client.prompt import render_recall
from memstream.client.trace import RecallTrace
from memstream.domain.models import Complexity


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class MemoryFact(_Answer):
    """One sentence or bullet of a memory, with the ids of the messages it comes from."""

    text: str
    source_ids: list[str]


class MemoryDerivation(_Answer):
    """What wrote a memory: the backend, model, prompt version, embedder, lexicon and what
    read its facts."""

    backend: str
    model: str
    prompt_version: str
    embedder: str
    lexicon: str = "light-en"  # answers from a server older than the lexicon lack it
    extraction: str = "rules-1"  # and from one older than the knowledge write, this


class Memory(_Answer):
    """One node of the user's memory tree (level 1 an exchange ... level 5 the profile)."""

    id: str
    user_id: str
    level: int = Field(ge=1, le=5)
    level_name: str
    t_start: datetime
    t_end: datetime
    text: str
    source_ids: list[str]
    parent_id: str | None
    session_id: str | None
    version: int
    degraded: bool
    score: float | None = None
    facts: list[MemoryFact] = []
    derivation: MemoryDerivation | None = None  # in a memory's detail; in recall on request
    # In recall with the knowledge write on: when what it says held, and what replaced it.
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_by: str | None = None
    # How the end was known: "stated" (a fact it states was replaced) or "inferred".
    end_basis: Literal["stated", "inferred"] | None = None
    # In recall: the text is an excerpt of a leaf too long for the budget, of this size.
    excerpt: bool = False
    full_tokens: int | None = None


class Fact(_Answer):
    """One claim about one subject ("Maya lives in Berlin"), with when it held (event time),
    when memstream learned it (record time), what it replaced and what replaced it."""

    fact_id: str
    text: str
    subject: str
    subject_name: str
    attribute: str
    value: str
    certainty: str
    negated: bool
    valid_from: datetime
    valid_to: datetime | None
    supersedes: str | None
    superseded_by: str | None
    recorded_at: datetime
    source_ids: list[str]  # the latest statements' (at most 8): `statements` counts them all
    statements: int = 1
    # As of recall's query_time, else of the request: "holds", "planned" (begins later) or
    # "ended"; None from a server that does not say.
    status: Literal["holds", "planned", "ended"] | None = None

    @property
    def holds(self) -> bool:
        """Whether it holds as of recall's query_time (else the request's time); from a
        server that does not say: never closed, never replaced, not a negation."""
        if self.status is not None:
            return self.status == "holds"
        return self.valid_to is None and self.superseded_by is None and not self.negated

    @property
    def planned(self) -> bool:
        """Whether it was told to begin after recall's query_time (else the request's)."""
        return self.status == "planned"


class _Pending(_Answer):
    # With `after`: whether a message named may be missing, why (`not_yet_processed`,
    # `awaiting_reply`, `awaiting_earlier_seq`), and the ids of the messages held back.
    pending: bool = False
    pending_reason: str | None = None
    held_messages: list[str] = []


class Recall(_Pending):
    """What to remember for one query: the memories, their token count, stage timings."""

    user_id: str
    complexity: Complexity
    keywords: list[str]
    memories: list[Memory]
    facts: list[Fact] = []  # from a server with the knowledge write on
    tokens: int
    omitted_for_budget: int = 0  # relevant memories the token budget left out
    timings_ms: dict[str, float]
    degraded: bool
    trace: RecallTrace | None = None  # asked for with `explain=True`

    def as_prompt(self, heading: str = "What you remember about this user:") -> str:
        """The facts and memories as text to paste into a prompt: what holds now first, with
        since when and what it replaced ("Maya lives in Berlin (since Apr 2024; before:
        Porto)"); a replaced fact or memory is shown with the dates it held, never as current.
        An excerpt says so, and so does a budget that left relevant memories out."""
        return render_recall(self.facts, self.memories, heading, self.omitted_for_budget)


class Profile(_Pending):
    user_id: str
    profile: Memory | None


class MemoryPage(_Pending):
    user_id: str
    items: list[Memory]
    next_cursor: str | None


class MemoryDetail(_Pending):
    memory: Memory
    children: list[Memory]
    ancestors: list[Memory]
    source_ids: list[str]


class ForgetResult(_Answer):
    user_id: str
    qdrant_points: int
    redis_keys: int
    forget_event_published: bool


class TurnKey(_Answer):
    """The public key a producer seals a user's turns for (`client.turn_sealing`)."""

    user_id: str
    public_key: str  # base64 of 32 bytes
    envelope: str = "sealed_turn.v1"  # what to seal in: the SDK knows this one only


class Facts(_Pending):
    """A user's facts: those that hold now, at `at`, or (`history`) every version."""

    user_id: str
    subject: str | None
    at: datetime | None
    history: bool
    facts: list[Fact]


class EntitySummary(_Answer):
    """Someone or something the user's memories name, with how often and when."""

    key: str
    name: str
    kind: str
    aliases: list[str]
    first_seen: datetime
    last_seen: datetime
    mentions: int
    leaves: int


class Entities(_Pending):
    user_id: str
    total: int
    entities: list[EntitySummary]


class EntityDetail(_Pending):
    """One entity: every version of its facts in time order, and the exchanges naming it."""

    user_id: str
    entity: EntitySummary
    timeline: list[Fact]
    memories: list[Memory]
