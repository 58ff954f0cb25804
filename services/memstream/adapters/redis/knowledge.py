"""A user's knowledge in Redis: what each L1 says (its facts, its entity surfaces), written
in the segmenter's transaction (`queue_knowledge`) and read as `ports.KnowledgeReads`.

Two hashes keyed by L1 id (`keys`): one write per hash whatever the number of L1s, a leaf
written again replaces its fields and a removed one loses them, so a replay writes the same
thing and a forget leaves nothing of its messages. Reads fetch the hash and derive versions
and entities in the domain, so they always agree with the L1s committed; what they derive is
kept by the user's revision, which every change sets anew (`knowledge_cache`), so a read
when nothing changed is one GET.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Collection
from datetime import datetime
from typing import Any

from memstream.adapters.redis import keys
from memstream.adapters.redis.base import RedisBase, done, text
from memstream.adapters.redis.knowledge_cache import Derived, DerivedFacts
from memstream.contracts.knowledge_codec import (
    decode_fact,
    decode_leaf_entities,
    decode_slot_facts,
    encode_fact,
    encode_leaf_entities,
)
from memstream.domain.entity_index import Entity, EntityIndex
from memstream.domain.facts import AtomicFact
from memstream.domain.knowledge import (
    KnowledgeChange,
    entities_by_key,
    entity_index,
    facts_in,
    history_in,
    named_entity,
    said_before,
    versions_in,
)


def queue_knowledge(pipe: Any, prefix: str, change: KnowledgeChange) -> None:
    """Queue `change` on a transaction's pipeline: a few commands whatever its size."""
    facts: dict[str, str] = {}
    surfaces: dict[str, str] = {}
    gone_facts = list(change.dropped)
    gone_surfaces = list(change.dropped)
    for leaf_id, knowledge in change.leaves.items():
        # A leaf written for the first time has nothing stored to clear; one written again
        # may have had facts or surfaces it no longer has.
        again = leaf_id not in change.first_written
        if knowledge.facts:
            facts[leaf_id] = json.dumps([encode_fact(f) for f in knowledge.facts])
            slots = {
                keys.fact_slot_member(f.subject, f.attribute, leaf_id): 0 for f in knowledge.facts
            }
            pipe.zadd(prefix + keys.FACT_SLOTS, slots)
        elif again:
            gone_facts.append(leaf_id)
        if knowledge.entities.surfaces or knowledge.entities.links:
            surfaces[leaf_id] = json.dumps(encode_leaf_entities(knowledge.entities))
        elif again:
            gone_surfaces.append(leaf_id)
    for key, values, gone in (
        (keys.FACTS, facts, gone_facts),
        (keys.ENTITIES, surfaces, gone_surfaces),
    ):
        if values:
            pipe.hset(prefix + key, mapping=values)
        if gone:
            pipe.hdel(prefix + key, *gone)
    if facts or surfaces or gone_facts or gone_surfaces:
        # Readers hold what they derived by revision (knowledge_cache.py): a new one, never
        # used before, in the transaction that changes what they derived it from.
        pipe.set(prefix + keys.KNOWLEDGE_REVISION, secrets.token_hex(8))


class RedisKnowledge(RedisBase):
    """`ports.KnowledgeReads` and `ports.ProfileFacts`, what it derives kept in `knowledge_cache`
    by revision."""

    async def facts(
        self, user_id: str, subject: str | None = None, at: datetime | None = None
    ) -> list[AtomicFact]:
        return list(facts_in((await self._derived_facts(user_id)).timelines, subject, at))

    async def fact_history(self, user_id: str, subject: str, attribute: str) -> list[AtomicFact]:
        timelines = (await self._derived_facts(user_id)).timelines
        return list(history_in(timelines, subject, attribute))

    async def fact_versions(self, user_id: str) -> list[AtomicFact]:
        return list(versions_in((await self._derived_facts(user_id)).timelines))

    async def entity_index(self, user_id: str) -> EntityIndex:
        held = await self._held(user_id)
        if held is not None and held.index is not None:
            return held.index
        revision, raw = await self._read(user_id, keys.ENTITIES)
        index = entity_index(
            {text(leaf_id): decode_leaf_entities(json.loads(doc)) for leaf_id, doc in raw.items()}
        )
        self.knowledge_cache.keep_index(user_id, revision, index)
        return index

    async def entities(self, user_id: str) -> list[Entity]:
        return entities_by_key(await self.entity_index(user_id))

    async def entity(self, user_id: str, name: str) -> Entity | None:
        return named_entity(await self.entity_index(user_id), name)

    async def slot_facts(
        self, user_id: str, slots: Collection[tuple[str, str]], leaf_ids: Collection[str]
    ) -> dict[str, tuple[AtomicFact, ...]]:
        """Only the L1s of the slots asked (and of those `leaf_ids` stated) are read, through
        the slot index; facts written before the index existed are all read."""
        facts_key, index = self._key(user_id, keys.FACTS), self._key(user_id, keys.FACT_SLOTS)
        named = sorted(leaf_ids)
        pipe = self._r.pipeline(transaction=False)
        pipe.exists(index)
        if named:
            pipe.hmget(facts_key, named)
        indexed, *stated = await pipe.execute()
        if not indexed:
            _, raw = await self._read(user_id, keys.FACTS)
            return decode_slot_facts({text(k): text(v) for k, v in raw.items()}, slots, leaf_ids)
        docs = {i: text(d) for i, d in zip(named, stated[0] if named else (), strict=True) if d}
        wanted = set(slots) | {
            (f["subject"], f["attribute"]) for doc in docs.values() for f in json.loads(doc)
        }
        pipe = self._r.pipeline(transaction=False)
        for subject, attribute in sorted(wanted):
            start = keys.fact_slot_member(subject, attribute).encode()
            pipe.zrangebylex(index, b"[" + start, b"[" + start + b"\xff")
        found = {
            keys.leaf_of_fact_slot(text(m)) for members in await pipe.execute() for m in members
        }
        missing = sorted(found - docs.keys())
        if missing:
            values = await done(self._r.hmget(facts_key, missing))
            docs |= {i: text(d) for i, d in zip(missing, values, strict=True) if d}
        return decode_slot_facts(docs, slots, leaf_ids)

    async def facts_said(self, user_id: str, before: datetime) -> list[AtomicFact]:
        return said_before(await self._observations(user_id), before)

    async def _observations(self, user_id: str) -> list[AtomicFact]:
        return list((await self._derived_facts(user_id)).observations)

    async def _derived_facts(self, user_id: str) -> DerivedFacts:
        held = await self._held(user_id)
        if held is not None and held.facts is not None:
            return held.facts
        revision, raw = await self._read(user_id, keys.FACTS)
        facts = DerivedFacts.of([decode_fact(f) for doc in raw.values() for f in json.loads(doc)])
        self.knowledge_cache.keep_facts(user_id, revision, facts)
        return facts

    async def _held(self, user_id: str) -> Derived | None:
        """What is held of the user at its current revision: one GET, or none when nothing
        is held of the user at all."""
        if user_id not in self.knowledge_cache:
            return None
        revision = await self._r.get(self._key(user_id, keys.KNOWLEDGE_REVISION))
        return self.knowledge_cache.at(user_id, revision)

    async def _read(self, user_id: str, hash_key: str) -> tuple[bytes | None, dict[Any, Any]]:
        """One of the knowledge hashes and the revision it is at, read together (atomic)."""
        pipe = (await self._client_for(user_id)).pipeline(transaction=True)
        pipe.get(self._key(user_id, keys.KNOWLEDGE_REVISION))
        pipe.hgetall(self._key(user_id, hash_key))
        revision, raw = await pipe.execute()
        if revision is None:
            self.knowledge_cache.drop(user_id)  # forgotten: nothing of it is kept
        return revision, raw
