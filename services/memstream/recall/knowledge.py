"""What the HTTP API reads of a user's knowledge: facts (now, at a time, or every version) and
the entities the user's memories name.

Routes call these methods and encode what they return; nothing here knows about HTTP. A
subject or an entity is named as a client would: a name ("Maya", "Mel"), an alias ("Maya's
brother"), an entity key, or a fact's subject key ("speaker:maya"); `domain.knowledge`
resolves it against the user's entity index. None answers "no such subject or entity".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from memstream.domain.entity_index import Entity, entity_leaves
from memstream.domain.facts import AtomicFact
from memstream.domain.knowledge import facts_about, named_entity
from memstream.domain.models import MemoryNode
from memstream.ports import NodeReader
from memstream.ports.knowledge import KnowledgeReads


@dataclass(frozen=True, slots=True)
class EntityPage:
    """The user's entities, the most mentioned first, and how many there are in all."""

    total: int
    entities: tuple[Entity, ...]


@dataclass(frozen=True, slots=True)
class EntityDetail:
    """One entity, every version of the facts about it in time order, and the leaves that
    mention it (the most recently said first)."""

    entity: Entity
    timeline: tuple[AtomicFact, ...]
    leaves: tuple[MemoryNode, ...]


class KnowledgeService:
    """Facts and entities read for the API (the knowledge write on)."""

    def __init__(
        self,
        *,
        knowledge: KnowledgeReads,
        tree: NodeReader,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._knowledge = knowledge
        self._tree = tree
        self._clock = clock

    def now(self) -> datetime:
        """The time "now" is read at: a change told to begin later is planned until then."""
        return self._clock()

    async def facts(
        self,
        user_id: str,
        *,
        subject: str | None = None,
        at: datetime | None = None,
        history: bool = False,
    ) -> tuple[AtomicFact, ...] | None:
        """The facts that hold now (or at `at`, as known today), or with `history` every
        version (that had begun by `at`); of everyone, or of `subject` only (None when no
        such subject is known). Now, a change told to begin later ("I'm joining Wipro next
        month") comes beside the version it will close, which holds until it begins."""
        if history:
            found = await self._knowledge.fact_versions(user_id)
            if at is not None:
                found = [f for f in found if f.valid_from <= at]
        else:
            now = self._clock() if at is None else None
            found = await self._knowledge.facts(user_id, at=at, now=now)
        if subject is None:
            return tuple(found)
        index = await self._knowledge.entity_index(user_id)
        return facts_about(index, found, subject)

    async def entities(self, user_id: str, limit: int) -> EntityPage:
        """At most `limit` entities, the most mentioned first (ties by key)."""
        every = await self._knowledge.entities(user_id)
        ranked = sorted(every, key=lambda e: (-e.mentions, e.key))
        return EntityPage(total=len(every), entities=tuple(ranked[:limit]))

    async def entity(self, user_id: str, name: str, leaf_limit: int) -> EntityDetail | None:
        """The entity `name` stands for with its timeline and at most `leaf_limit` leaves."""
        index = await self._knowledge.entity_index(user_id)
        found = named_entity(index, name)
        if found is None:
            return None
        key = found.key
        versions = await self._knowledge.fact_versions(user_id)
        about = facts_about(index, versions, key) or ()
        timeline = sorted(about, key=lambda f: (f.valid_from, f.recorded_at, f.fact_id))
        leaf_ids = entity_leaves(index, [key]).get(key, ())[:leaf_limit]
        leaves = await self._tree.get_many(user_id, list(leaf_ids))
        return EntityDetail(found, tuple(timeline), tuple(leaves))
