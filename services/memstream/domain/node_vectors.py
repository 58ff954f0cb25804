"""A stored node's vectors, made as the workers make them when they write it: what the
export's import and the repair index again. Pure; the embedding itself is the caller's."""

from __future__ import annotations

from collections.abc import Sequence

from memstream.domain.models import IndexedMemory, Level, MemoryNode
from memstream.domain.nodes import embedding_head, mean_direction
from memstream.domain.sparse import document_vector


def embedded_texts(node: MemoryNode) -> list[str]:
    """What the node's dense vector encodes: an L1's messages as spoken (the segmenter's
    choice: closer to how people ask), a summary's head (the consolidator's)."""
    if node.level == Level.SEGMENT and node.messages:
        return [m.text for m in node.messages]
    return [embedding_head(node.text)]


def indexed_memories(
    nodes: Sequence[MemoryNode], vectors: Sequence[Sequence[float]]
) -> list[IndexedMemory]:
    """The nodes with their dense vectors (the mean direction of their `embedded_texts`'
    embeddings, given in that order, node after node) and lexical vectors."""
    memories: list[IndexedMemory] = []
    at = 0
    for node in nodes:
        count = len(embedded_texts(node))
        memories.append(
            IndexedMemory(
                node, mean_direction(vectors[at : at + count]), document_vector(node.text)
            )
        )
        at += count
    if at != len(vectors):
        raise ValueError(f"{len(vectors)} vectors for {at} embedded texts")
    return memories
