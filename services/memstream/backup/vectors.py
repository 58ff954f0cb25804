"""A stored node's vectors, made as the workers make them when they write it."""

from __future__ import annotations

from collections.abc import Sequence

from memstream.domain.models import IndexedMemory, MemoryNode
from memstream.domain.node_vectors import embedded_texts, indexed_memories
from memstream.ports import Embedder

__all__ = ["embedded_texts", "indexed"]


async def indexed(embedder: Embedder, nodes: Sequence[MemoryNode]) -> list[IndexedMemory]:
    """The nodes with their dense vectors (embedded in one call) and lexical vectors."""
    vectors = await embedder.embed([t for n in nodes for t in embedded_texts(n)])
    return indexed_memories(nodes, vectors)
