"""The recall API's answers as typed objects (a test holds them to the served OpenAPI).

Unknown fields are ignored, so a newer server does not break an older client.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from memstream.domain.models import Complexity


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class MemoryFact(_Answer):
    """One sentence or bullet of a memory, with the ids of the messages it comes from."""

    text: str
    source_ids: list[str]


class MemoryDerivation(_Answer):
    """What wrote a memory: the backend, model, prompt version, embedder and lexicon."""

    backend: str
    model: str
    prompt_version: str
    embedder: str
    lexicon: str = "light-en"  # answers from a server older than the lexicon lack it


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


class Recall(_Answer):
    """What to remember for one query: the memories, their token count, stage timings."""

    user_id: str
    complexity: Complexity
    keywords: list[str]
    memories: list[Memory]
    tokens: int
    timings_ms: dict[str, float]
    degraded: bool

    def as_prompt(self, heading: str = "What you remember about this user:") -> str:
        """The memories as text to paste into a prompt: the broad ones first, each dated."""
        if not self.memories:
            return ""
        lines = [heading]
        for m in self.memories:
            when = m.t_start.date().isoformat()
            end = m.t_end.date().isoformat()
            span = when if end == when else f"{when} to {end}"
            lines.append(f"- [{m.level_name}, {span}] {m.text}")
        return "\n".join(lines)


class Profile(_Answer):
    user_id: str
    profile: Memory | None


class MemoryPage(_Answer):
    user_id: str
    items: list[Memory]
    next_cursor: str | None


class MemoryDetail(_Answer):
    memory: Memory
    children: list[Memory]
    ancestors: list[Memory]
    source_ids: list[str]


class ForgetResult(_Answer):
    user_id: str
    qdrant_points: int
    redis_keys: int
    forget_event_published: bool
