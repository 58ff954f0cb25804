"""What memstream asks of models: text to vectors, and text written or judged."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memstream.domain.facts import FactReading
from memstream.domain.models import (
    Complexity,
    Level,
    MemoryNode,
    Plan,
    Summary,
    Turn,
    Window,
)
from memstream.domain.profile_facts import ProfileKnowledge
from memstream.domain.query import Query


class Embedder(Protocol):
    @property
    def dim(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class FactReader(Protocol):
    async def read_facts(self, leaf: MemoryNode) -> FactReading:
        """The atomic facts an L1's messages state, each citing the messages it comes from
        (`domain.knowledge`), none when they state none; and what read them."""
        ...


class LanguageModel(FactReader, Protocol):
    async def write_segment(
        self, messages: Sequence[Turn], history: Sequence[MemoryNode]
    ) -> Summary: ...

    async def consolidate(
        self,
        level: Level,
        window: Window,
        children: Sequence[MemoryNode],
        history: Sequence[MemoryNode],
        knowledge: ProfileKnowledge | None = None,
    ) -> Summary:
        """The window's summary; a profile (L5) also states `knowledge`, the facts holding
        at the window's end and its changes, when the knowledge write is on."""
        ...

    async def plan(self, query: Query) -> Plan: ...

    async def gate(
        self, query: Query, complexity: Complexity, candidates: Sequence[MemoryNode]
    ) -> list[str] | None:
        """Ids of the candidates worth keeping; None when the backend could not decide."""
        ...
