"""The knowledge of a segmenter commit: what its L1s say, and the fact versions it changes.

An L1's facts are read by the offline rules, or by the LLM backend's reader when there is
one; the reader says what actually read them (the model, or the rules it fell back to), and
the L1 records that in its derivation. The versions the commit changes go on the change
feed, in the commit's outbox: they are found by comparing what the user's L1s said before
with what they will say (`domain.fact_changes`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from memstream.contracts.feed_events import fact_events
from memstream.contracts.records import Outbound
from memstream.domain.fact_changes import (
    fact_changes,
    joined,
    restated,
    stepped_changes,
    touches_facts,
)
from memstream.domain.fact_frames import Frames, framed_change, frames_of, prototype_texts
from memstream.domain.facts import ENDED
from memstream.domain.knowledge import KnowledgeChange, cleared, knowledge_change
from memstream.domain.models import Level, MemoryNode
from memstream.ports import Embedder, FactReader, LeafFacts

# A vector's similarity to each prototype, in their order.
Similarities = Callable[[Sequence[float]], Sequence[float]]


class FramePrototypes:
    """The frames' prototypes (`domain.fact_frames`), embedded once by the embedder that
    embeds the messages, on first use: the messages' vectors are compared with them (by
    `similarities`, given the prototypes' vectors, when one is given)."""

    def __init__(
        self,
        embedder: Embedder,
        similarities: Callable[[Sequence[Sequence[float]]], Similarities] | None = None,
    ) -> None:
        self._embedder = embedder
        self._similarities = similarities
        self._frames: Frames | None = None

    async def frames(self) -> Frames:
        if self._frames is None:
            texts = [text for _, text in prototype_texts()]
            vectors = await self._embedder.embed(texts)
            frames = frames_of(vectors)
            if self._similarities is not None:
                frames = replace(frames, similarities=self._similarities(vectors))
            self._frames = frames
        return self._frames


Vectors = Mapping[str, Sequence[float]]  # a message's vector by its text


async def read_knowledge(
    written: Sequence[MemoryNode],
    removed: Sequence[MemoryNode],
    *,
    enabled: bool,
    reader: FactReader | None,
    frames: tuple[Frames, Vectors] | None = None,
) -> tuple[KnowledgeChange, dict[str, str]]:
    """The knowledge of the L1s written and removed, and by L1 id the extraction that read
    each one's facts (when a reader did: the rules' own are the deployment's). With
    `frames` (the prototypes and the messages' vectors), the rules' facts are joined by
    those the messages imply by their frames."""
    if not enabled:
        return cleared(written, removed), {}
    if reader is None and frames is not None:
        prototypes, vectors = frames
        return framed_change(written, removed, vectors, prototypes), {}
    if reader is None:
        return knowledge_change(written, removed), {}
    leaves = [n for n in written if n.level == Level.SEGMENT]
    readings = await asyncio.gather(*(reader.read_facts(n) for n in leaves))
    by_leaf = dict(zip([n.id for n in leaves], readings, strict=True))
    facts = {leaf_id: reading.facts for leaf_id, reading in by_leaf.items()}
    extractions = {leaf_id: reading.extraction for leaf_id, reading in by_leaf.items()}
    return knowledge_change(written, removed, facts), extractions


def read_by(node: MemoryNode, extraction: str | None) -> MemoryNode:
    """`node` naming in its derivation the extraction that read its facts."""
    derivation = node.derivation
    if extraction is None or derivation is None or derivation.extraction == extraction:
        return node
    return replace(node, derivation=replace(derivation, extraction=extraction))


async def fact_outbox(
    store: LeafFacts, topic: str, user_id: str, change: KnowledgeChange
) -> tuple[list[Outbound], KnowledgeChange]:
    """The fact versions `change` changes, as change-feed events, and `change` with the
    heads of the slots it touches as they will be. A commit that only writes new L1s steps
    their slots' heads forward (a restatement reads its slot's head, not its history); the
    slots' statements are read only for a slot no head can take, or when the commit says
    stored L1s again or drops them."""
    if not touches_facts(change):
        return [], change
    slots = {(f.subject, f.attribute) for k in change.leaves.values() for f in k.facts}
    if restated(change):
        # With their subjects' latest endings: a statement before one is not stepped.
        heads = await store.slot_heads(user_id, slots | {(s, ENDED) for s, _ in slots})
        changes, left = stepped_changes(heads, change)
        if left:
            stored = await store.slot_facts(user_id, {(s, a) for _, s, a in left}, ())
            changes = joined(changes, fact_changes(stored, change, left))
    else:
        again = {*change.dropped, *(i for i in change.leaves if i not in change.first_written)}
        changes = fact_changes(await store.slot_facts(user_id, slots, again), change)
    events = [Outbound(topic, user_id, event) for event in fact_events(user_id, changes)]
    return events, replace(change, heads=changes.heads)
