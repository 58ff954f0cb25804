"""What noticing and repairing a lost store asks of the two stores (`memstream.repair`).

The tree (Redis) and the index (Qdrant) each hold every node: the tree with its links, the
index with the node's whole JSON in the payload. So either can be written again from the
other, and comparing their counts tells when one of them was lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memstream.domain.forgetting import Guard
from memstream.domain.knowledge import KnowledgeChange
from memstream.domain.models import MemoryNode, StoredNode
from memstream.ports.stores import VectorIndex
from memstream.ports.tree import NodeReader, Tombstones


class IndexScan(VectorIndex, Protocol):
    async def total(self) -> int:
        """Points in the whole collection, every user's."""
        ...

    async def users_with_points(self, limit: int) -> list[str]:
        """Up to `limit` users that hold points."""
        ...

    async def user_nodes(
        self, user_id: str, after: str | None, limit: int
    ) -> tuple[list[MemoryNode], str | None]:
        """A page of the user's nodes as the payloads keep them (children empty), and where
        the next page starts (None: no more)."""
        ...

    async def versions(self, user_id: str, node_ids: Sequence[str]) -> dict[str, int]:
        """The version each of these nodes has in the index, for those it holds."""
        ...


class TreeRestore(NodeReader, Tombstones, Protocol):
    async def users_with_nodes(self, limit: int) -> list[str]:
        """Up to `limit` users with nodes in the tree."""
        ...

    async def restore_nodes(
        self,
        user_id: str,
        nodes: Sequence[StoredNode],
        knowledge: KnowledgeChange | None,
        guard: Guard,
    ) -> bool:
        """Write these nodes as they are (same version), with their links and indexes, and
        the knowledge of their L1s when given, in one transaction; False (nothing written)
        when the guard refuses it (the user was forgotten meanwhile)."""
        ...
