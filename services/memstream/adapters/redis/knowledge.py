"""A user's knowledge in Redis: what each L1 says (its facts, its entity surfaces), written
in the segmenter's transaction (`queue_knowledge`) and read as `ports.KnowledgeReads`.

Two hashes keyed by L1 id (`keys`): one write per hash whatever the number of L1s, a leaf
written again replaces its fields and a removed one loses them, so a replay writes the same
thing and a forget leaves nothing of its messages. Reads fetch the hash and derive versions
and entities in the domain, so they always agree with the L1s committed.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from memstream.adapters.redis import keys
from memstream.adapters.redis.base import RedisBase, done, text
from memstream.contracts.knowledge_codec import (
    decode_fact,
    decode_leaf_entities,
    encode_fact,
    encode_leaf_entities,
)
from memstream.domain.entity_index import Entity, EntityIndex
from memstream.domain.facts import AtomicFact
from memstream.domain.knowledge import (
    KnowledgeChange,
    current_facts,
    entity_index,
    fact_history,
    find_entity,
)


def queue_knowledge(pipe: Any, prefix: str, change: KnowledgeChange) -> None:
    """Queue `change` on a transaction's pipeline: a few commands whatever its size."""
    facts: dict[str, str] = {}
    surfaces: dict[str, str] = {}
    gone_facts = list(change.dropped)
    gone_surfaces = list(change.dropped)
    for leaf_id, knowledge in change.leaves.items():
        if knowledge.facts:
            facts[leaf_id] = json.dumps([encode_fact(f) for f in knowledge.facts])
        else:
            gone_facts.append(leaf_id)  # written again without the facts it had, perhaps
        if knowledge.entities.surfaces or knowledge.entities.links:
            surfaces[leaf_id] = json.dumps(encode_leaf_entities(knowledge.entities))
        else:
            gone_surfaces.append(leaf_id)
    for key, values, gone in (
        (keys.FACTS, facts, gone_facts),
        (keys.ENTITIES, surfaces, gone_surfaces),
    ):
        if values:
            pipe.hset(prefix + key, mapping=values)
        if gone:
            pipe.hdel(prefix + key, *gone)


class RedisKnowledge(RedisBase):
    """`ports.KnowledgeReads` and `ports.ProfileFacts`."""

    async def facts(
        self, user_id: str, subject: str | None = None, at: datetime | None = None
    ) -> list[AtomicFact]:
        return list(current_facts(await self._observations(user_id), subject, at))

    async def fact_history(self, user_id: str, subject: str, attribute: str) -> list[AtomicFact]:
        return list(fact_history(await self._observations(user_id), subject, attribute))

    async def entity_index(self, user_id: str) -> EntityIndex:
        raw = await done(self._r.hgetall(self._key(user_id, keys.ENTITIES)))
        return entity_index(
            {text(leaf_id): decode_leaf_entities(json.loads(doc)) for leaf_id, doc in raw.items()}
        )

    async def entities(self, user_id: str) -> list[Entity]:
        index = await self.entity_index(user_id)
        return [index.entities[key] for key in sorted(index.entities)]

    async def entity(self, user_id: str, name: str) -> Entity | None:
        index = await self.entity_index(user_id)
        key = find_entity(index, name)
        return index.entities.get(key) if key is not None else None

    async def facts_said(self, user_id: str, before: datetime) -> list[AtomicFact]:
        return [f for f in await self._observations(user_id) if f.recorded_at < before]

    async def _observations(self, user_id: str) -> list[AtomicFact]:
        raw = await done(self._r.hvals(self._key(user_id, keys.FACTS)))
        return [decode_fact(f) for doc in raw for f in json.loads(doc)]
