"""Recall's read of the knowledge a question asks about: its slots' versions, in one value.

Only a question about a state reads anything: the facts true now (and at the asked time,
when that is past), then the entity index, the slots asked chosen in the domain
(`domain/fact_recall.py`), and each slot's history, read once: the facts to return and the
versions that give the memories their validity both come from it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import datetime

from memstream.domain.entity_index import EntityIndex
from memstream.domain.fact_recall import (
    asked_instant,
    asked_slots,
    facts_for_query,
    worded_slots,
)
from memstream.domain.fact_timeline import begun_by
from memstream.domain.facts import AtomicFact
from memstream.domain.query import Query
from memstream.ports.knowledge import KnowledgeReads

__all__ = ["AskedKnowledge", "read_asked_knowledge"]


@dataclass(frozen=True)
class AskedKnowledge:
    """The facts a question asks for, in order, and every version of the slots it asks."""

    facts: tuple[AtomicFact, ...] = ()
    versions: tuple[AtomicFact, ...] = ()


async def read_asked_knowledge(
    knowledge: KnowledgeReads,
    user_id: str,
    query: Query,
    when: datetime,
    entity_index: Awaitable[EntityIndex] | None = None,
) -> AskedKnowledge:
    """Nothing for a question about no state; else the facts it asks for and the versions of
    their slots. The entity index is awaited only when some fact shares a word with the
    question: `entity_index` when the caller reads it already (the heatmap does), else read."""
    if query.state is None:
        return AskedKnowledge()
    instant = asked_instant(query, when)
    # The slots asked are among those with a version now, or at the past time asked about.
    # Now with the changes told to begin later, beside the versions holding until then.
    reads = [knowledge.facts(user_id, now=when)]
    if instant != when:
        reads.append(knowledge.facts(user_id, at=instant))
    found = [f for facts in await asyncio.gather(*reads) for f in facts]
    if not worded_slots(query, found):
        return AskedKnowledge()
    index = await (entity_index or knowledge.entity_index(user_id))
    slots = asked_slots(query, found, index)
    if not slots:
        return AskedKnowledge()
    histories = await asyncio.gather(
        *(knowledge.fact_history(user_id, subject, attribute) for subject, attribute in slots)
    )
    by_slot = {slot: tuple(h) for slot, h in zip(slots, histories, strict=True)}
    # The memories are dated by the versions begun by the question's time: one telling of
    # a change planned for later ("I'm joining Wipro next month") is not yet true, and the
    # one stating what it will replace still is.
    return AskedKnowledge(
        facts=facts_for_query(query, by_slot, when),
        versions=tuple(v for h in by_slot.values() for v in begun_by(h, when)),
    )
