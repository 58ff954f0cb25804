"""A returned fact's telling goes on past the gate beside a memory stale on its slot.

A fact recall returns for a question about a state ("Rosa lives in Montreal") was read from
a message; the leaf holding that message is where the user said it. The gate keeps a leaf
for the words it shares with the question, and the sentence that told a change seldom
shares them: "We moved to Montreal last week" holds no word of "Where does Rosa live now?",
while "I live in Lyon", said months before, holds two. Left to the gate, the memories
returned beside the current fact may all be stale ones. A fact is matched to the question by
its slot, not its words, so the leaf it comes from answers the question as much as the fact
does: when a memory the gate kept is stale at the asked time on the fact's slot and none
holds a message the fact was read from, the newest candidate leaf that does goes on beside
them, and the fit and the validity order place it as any other. One leaf a fact, and only
where the memories kept would otherwise show, on its slot, what no longer holds: a telling
often names what it replaced ("I'm an illustrator now. I left the architecture firm"), and
beside memories that hold it adds that old value and nothing new. Only leaves already among
the candidates: reading more would cost a store round trip on every such question. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memstream.domain.facts import AtomicFact
from memstream.domain.memory_validity import excludes, memory_validity
from memstream.domain.models import Level
from memstream.domain.ranking import RecalledMemory


def with_fact_evidence(
    kept: Sequence[RecalledMemory],
    candidates: Sequence[RecalledMemory],
    facts: Sequence[AtomicFact],
    versions: Sequence[AtomicFact],
    instant: datetime,
) -> list[RecalledMemory]:
    """What the gate kept, then, for each of `facts` whose slot a kept memory is stale on at
    `instant` (read on the slot's `versions`) and no kept memory holds a source message of,
    the newest candidate leaf that does."""
    told = {source for m in kept for source in m.node.source_ids}
    passed = {m.node.id for m in kept}
    leaves = [m for m in candidates if m.node.level is Level.SEGMENT and m.node.id not in passed]
    evidence: dict[str, RecalledMemory] = {}
    for fact in facts:
        sources = set(fact.source_ids)
        if not sources or not sources.isdisjoint(told):
            continue
        of_slot = [v for v in versions if v.slot == fact.slot]
        if not any(excludes(memory_validity(m.node, of_slot), instant) for m in kept):
            continue
        telling = [m for m in leaves if not sources.isdisjoint(m.node.source_ids)]
        if telling:
            newest = max(telling, key=lambda m: m.node.t_end)
            evidence.setdefault(newest.node.id, newest)
    return [*kept, *evidence.values()]
