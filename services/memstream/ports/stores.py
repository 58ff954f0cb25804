"""What memstream asks of its vector index (the tree store's roles are in `ports.tree`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memstream.domain.models import IndexedMemory, Level, ScoredId, SparseVector


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

    async def delete_points(self, user_id: str, point_ids: Sequence[str]) -> None:
        """Remove these nodes' points (those a dropped commit had just written)."""
        ...
