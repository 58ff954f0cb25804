"""A stored node's vectors, made as the workers make them when they write it."""

from __future__ import annotations

from collections.abc import Sequence

from memstream.domain.models import IndexedMemory, Level, MemoryNode
from memstream.domain.nodes import embedding_head, mean_direction
from memstream.domain.sparse import document_vector
from memstream.ports import Embedder


def embedded_texts(node: MemoryNode) -> list[str]:
    """What the node's dense vector encodes: an L1's messages as spoken (the segmenter's
    choice: closer to how people ask), a summary's head (the consolidator's)."""
    if node.level == Level.SEGMENT and node.messages:
        return [m.text for m in node.messages]
    return [embedding_head(node.text)]


async def indexed(embedder: Embedder, nodes: Sequence[MemoryNode]) -> list[IndexedMemory]:
    """The nodes with their dense vectors (embedded in one call) and lexical vectors."""
    texts = [embedded_texts(n) for n in nodes]
    vectors = await embedder.embed([t for group in texts for t in group])
    memories: list[IndexedMemory] = []
    at = 0
    for node, group in zip(nodes, texts, strict=True):
        dense = mean_direction(vectors[at : at + len(group)])
        at += len(group)
        memories.append(IndexedMemory(node, dense, document_vector(node.text)))
    return memories
