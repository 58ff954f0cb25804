"""The knowledge routes' answers (they are also their OpenAPI schema): facts and entities."""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, Field

from memstream.domain.entities import EntityKind
from memstream.domain.entity_index import Entity
from memstream.edges.http.fact_schema import Fact
from memstream.edges.http.schemas import Memory, WritesSeen

# A name is a line of text: no control characters (C0, DEL, C1) nor line or paragraph
# separators; the length bound keeps a hostile "name" from reaching the resolver.
ENTITY_NAME_MAX_CHARS = 200
ENTITY_NAME_PATTERN = r"^[^\u0000-\u001f\u007f-\u009f\u2028\u2029]+$"
_ENTITY_NAME = re.compile(ENTITY_NAME_PATTERN)


def valid_entity_name(value: str) -> str:
    if not _ENTITY_NAME.fullmatch(value):
        raise ValueError("a name is a line of text, without control characters")
    return value


class FactsResponse(WritesSeen):
    user_id: str
    subject: str | None = Field(description="The subject asked for, or null for everyone's.")
    at: datetime | None = Field(description="The time asked about, or null for now.")
    history: bool = Field(description="True: every version, superseded ones included.")
    facts: list[Fact] = Field(
        description="By subject, attribute, then version (oldest first); now or at `at`, only "
        "the versions that held then."
    )


class EntitySummary(BaseModel):
    key: str = Field(description='The entity\'s key: "maya", "maya\'s brother".')
    name: str = Field(description="How the user's conversations mostly name it.")
    kind: EntityKind
    aliases: list[str] = Field(description="Other keys that stand for it.")
    first_seen: datetime
    last_seen: datetime
    mentions: int = Field(ge=0)
    leaves: int = Field(ge=0, description="How many exchanges (L1 memories) mention it.")

    @classmethod
    def of(cls, entity: Entity) -> EntitySummary:
        return cls(
            key=entity.key,
            name=entity.name,
            kind=entity.kind,
            aliases=list(entity.aliases),
            first_seen=entity.first_seen,
            last_seen=entity.last_seen,
            mentions=entity.mentions,
            leaves=len(entity.leaf_ids),
        )


class EntityPageResponse(WritesSeen):
    user_id: str
    total: int = Field(ge=0, description="How many entities the user's memories name.")
    entities: list[EntitySummary] = Field(description="The most mentioned first, up to `limit`.")


class EntityDetailResponse(WritesSeen):
    user_id: str
    entity: EntitySummary
    timeline: list[Fact] = Field(
        description="Every version of every fact about it, in event-time order."
    )
    memories: list[Memory] = Field(
        description="The exchanges (L1) that mention it, the most recent first, up to `limit`."
    )
