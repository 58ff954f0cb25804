"""The change feed's events as typed objects (`docs/change-feed.md`; schemas in `topics/`).

Each carries where it was read (`partition`, `offset`: a place to resume from) and a
`dedup_key` that is the same for every delivery of the same change, since the feed is at
least once: a worker that crashed after publishing publishes again. Unknown fields are
ignored, so a newer server does not break an older client.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from memstream.client.models import MemoryDerivation


class _FeedEvent(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    user_id: str
    partition: int = -1  # where the feed read it (set by `MemoryFeed`)
    offset: int = -1


class FeedFact(BaseModel):
    """A fact of a summary's text, with the messages it comes from."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    text: str
    source_ids: list[str]
    at: datetime | None = None


class MemoryWritten(_FeedEvent):
    """A memory was written: new (version 1) or a new version of it (same id)."""

    type: Literal["memory.v1"]
    id: str
    level: int = Field(ge=1, le=5)
    t_start: datetime
    t_end: datetime
    text: str
    parent_id: str | None
    source_ids: list[str]
    version: int
    degraded: bool
    session_id: str | None = None
    speakers: list[str] = []
    derivation: MemoryDerivation | None = None
    facts: list[FeedFact] = []

    @property
    def dedup_key(self) -> str:
        return f"memory:{self.id}:v{self.version}"


class MemoryRemoved(_FeedEvent):
    """Memories of a user were removed (their messages were forgotten)."""

    type: Literal["memory_removed.v1"]
    ids: list[str] = []
    count: int | None = None  # instead of `ids` when the list would be too long
    reason: str | None = None

    @property
    def dedup_key(self) -> str:
        digest = hashlib.sha256("\n".join(sorted(self.ids)).encode()).hexdigest()[:16]
        return f"removed:{self.user_id}:{digest}"


class UserForgotten(_FeedEvent):
    """Every memory of the user was removed; later events of the user start afresh."""

    type: Literal["user_forgotten.v1"]
    forget_id: str
    forgotten_at: datetime | None = None

    @property
    def dedup_key(self) -> str:
        return f"forgotten:{self.user_id}:{self.forget_id}"


class WindowConsolidated(_FeedEvent):
    """A window (L2-L5) was consolidated into `version` of `node_id` (announced before)."""

    type: Literal["window_consolidated.v1"]
    node_id: str
    level: int = Field(ge=2, le=5)
    t_start: datetime
    t_end: datetime
    version: int

    @property
    def dedup_key(self) -> str:
        return f"window:{self.node_id}:v{self.version}"


class RebuildFinished(_FeedEvent):
    """A rebuild wrote its last leaves; the windows above follow as consolidations."""

    type: Literal["rebuild_finished.v1"]
    rebuild_id: str
    leaves: int
    leaves_rewritten: int

    @property
    def dedup_key(self) -> str:
        return f"rebuild:{self.user_id}:{self.rebuild_id}"


class FactWritten(_FeedEvent):
    """A fact version was written: new, or its validity, links or sources changed. Replace
    the version with this `fact_id`; it holds while `valid_to` is null and it is not
    `negated`."""

    type: Literal["fact.v1"]
    fact_id: str
    subject: str
    subject_name: str
    attribute: str
    value: str
    text: str
    valid_from: datetime
    recorded_at: datetime
    certainty: str
    source_ids: list[str]  # the latest statements' (at most 8): `statements` counts them all
    negated: bool
    valid_to: datetime | None
    supersedes: str | None
    superseded_by: str | None
    statements: int = 1  # absent from events published before it was added

    @property
    def holds(self) -> bool:
        return self.valid_to is None and not self.negated

    @property
    def dedup_key(self) -> str:
        return f"fact:{self.fact_id}:{_digest(self.model_dump_json(exclude=_WHERE))}"


class FactRemoved(_FeedEvent):
    """These fact versions no longer exist: the messages that said them were forgotten."""

    type: Literal["fact_removed.v1"]
    fact_ids: list[str]

    @property
    def dedup_key(self) -> str:
        return f"facts_removed:{self.user_id}:{_digest(chr(10).join(sorted(self.fact_ids)))}"


class _FactChange(_FeedEvent):
    fact_id: str
    subject: str
    subject_name: str
    attribute: str
    value: str


class FactSuperseded(_FactChange):
    """A version that held was closed by a newer one (`superseded_by`) at `valid_to`: "Maya
    lives in Porto" ended when "Maya lives in Berlin" began, or when a negation of it did (an
    ending, also one told without its attribute: "I've left the Magpies" closes "plays for
    the Magpies"). Both `fact.v1` come before it."""

    type: Literal["fact_superseded.v1"]
    superseded_by: str
    valid_to: datetime | None

    @property
    def dedup_key(self) -> str:
        return f"superseded:{self.fact_id}:{self.superseded_by}"


class FactReopened(_FactChange):
    """A closed version holds again: the version that closed it (`was_superseded_by`) was
    forgotten. Its `fact.v1` comes before it."""

    type: Literal["fact_reopened.v1"]
    was_superseded_by: str

    @property
    def dedup_key(self) -> str:
        return f"reopened:{self.fact_id}:{self.was_superseded_by}"


FeedEvent = Annotated[
    MemoryWritten
    | MemoryRemoved
    | UserForgotten
    | WindowConsolidated
    | RebuildFinished
    | FactWritten
    | FactRemoved
    | FactSuperseded
    | FactReopened,
    Field(discriminator="type"),
]
_WHERE = {"partition", "offset"}  # where an event was read: not part of what it says


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]
