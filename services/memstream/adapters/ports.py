"""The small interfaces memstream needs from outside; one adapter module implements each."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from memstream.domain.models import Level, MemoryNode, Turn, Window

Complexity = Literal["simple", "hybrid", "complex"]


@dataclass(frozen=True, slots=True)
class SparseVector:
    """Lexical term weights: hashed term ids and their (BM25 term-frequency) weights."""

    indices: tuple[int, ...]
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class IndexedMemory:
    """A node with both of its vectors, ready for the vector index."""

    node: MemoryNode
    dense: Sequence[float]
    sparse: SparseVector


@dataclass(frozen=True, slots=True)
class ScoredId:
    id: str
    score: float


@dataclass(frozen=True, slots=True)
class Summary:
    """What an LLM backend wrote for one node."""

    text: str
    degraded: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Plan:
    complexity: Complexity
    keywords: tuple[str, ...]
    degraded: bool = False


class Embedder(Protocol):
    @property
    def dim(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class LanguageModel(Protocol):
    async def write_segment(
        self, messages: Sequence[Turn], history: Sequence[MemoryNode]
    ) -> Summary: ...

    async def consolidate(
        self,
        level: Level,
        window: Window,
        children: Sequence[MemoryNode],
        history: Sequence[MemoryNode],
    ) -> Summary: ...

    async def plan(self, query: str) -> Plan: ...

    async def gate(
        self, query: str, complexity: Complexity, candidates: Sequence[MemoryNode]
    ) -> list[str] | None:
        """Ids of the candidates worth keeping; None when the backend could not decide."""
        ...


class VectorIndex(Protocol):
    async def ensure_collection(self) -> None: ...

    async def upsert(self, memories: Sequence[IndexedMemory]) -> None: ...

    async def search_leaves(
        self,
        user_id: str,
        dense: Sequence[float],
        sparse: SparseVector,
        *,
        limit: int,
        dense_weight: float,
        level: Level = Level.SEGMENT,
    ) -> list[ScoredId]: ...

    async def delete_user(self, user_id: str) -> int: ...

    async def count(self, user_id: str, level: Level | None = None) -> int: ...
