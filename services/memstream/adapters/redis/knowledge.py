"""A user's knowledge in Redis: what each L1 says (its facts, its entity surfaces), written
in the segmenter's transaction (`queue_knowledge`) and read as `ports.KnowledgeReads`.

Two hashes keyed by L1 id (`keys`): one write per hash whatever the number of L1s, a leaf
written again replaces its fields and a removed one loses them, so a replay writes the same
thing and a forget leaves nothing of its messages. Reads fetch the hash and derive versions
and entities in the domain, so they always agree with the L1s committed; what they derive is
kept by the user's revision, which every change sets anew (`knowledge_cache`), so a read
when nothing changed is one GET, and one after a change reads only the L1s the change log
names and steps what it holds forward (`knowledge_log`, `domain.knowledge_view`).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Collection
from datetime import datetime
from typing import Any

from redis.exceptions import NoScriptError

from memstream.adapters.redis import keys
from memstream.adapters.redis.base import RedisBase, done, text
from memstream.adapters.redis.knowledge_cache import Held, View
from memstream.adapters.redis.knowledge_log import changed_since, queue_entry
from memstream.contracts.knowledge_codec import (
    decode_fact,
    decode_head,
    decode_leaf_entities,
    decode_slot_facts,
    encode_fact,
    encode_head,
    encode_leaf_entities,
)
from memstream.domain.entity_index import Entity, EntityIndex, LeafEntities
from memstream.domain.fact_changes import facts_needed, touches_facts
from memstream.domain.fact_heads import SlotHead
from memstream.domain.facts import AtomicFact
from memstream.domain.knowledge import (
    KnowledgeChange,
    entities_by_key,
    facts_in,
    history_in,
    named_entity,
    said_before,
    versions_in,
)
from memstream.domain.knowledge_view import EntitiesView, FactsView


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
    if change.heads is not None:
        heads = {
            keys.fact_slot_member(s, a): encode_head(h)
            for (_, s, a), h in change.heads.items()
            if h is not None
        }
        empty = [keys.fact_slot_member(s, a) for (_, s, a), h in change.heads.items() if h is None]
        if heads:
            pipe.hset(prefix + keys.FACT_HEADS, mapping=heads)
        if empty:
            pipe.hdel(prefix + keys.FACT_HEADS, *empty)
    elif touches_facts(change):
        # Written by a writer that did not step the heads (a restore): none may be stale;
        # the next commit touching a slot derives its head from the slot's statements.
        pipe.delete(prefix + keys.FACT_HEADS)
    changed = {*facts, *surfaces, *gone_facts, *gone_surfaces}
    if changed:
        # Readers hold what they derived by revision (knowledge_cache.py): a new one, never
        # used before, in the transaction that changes what they derived it from, logged
        # with the L1s it changed so they can step forward (knowledge_log.py).
        revision = secrets.token_hex(8)
        pipe.set(prefix + keys.KNOWLEDGE_REVISION, revision)
        queue_entry(pipe, prefix + keys.KNOWLEDGE_CHANGES, revision, changed)


class RedisKnowledge(RedisBase):
    """`ports.KnowledgeReads` and `ports.ProfileFacts`, what it derives kept in `knowledge_cache`
    by revision and stepped forward through the change log."""

    async def facts(
        self,
        user_id: str,
        subject: str | None = None,
        at: datetime | None = None,
        now: datetime | None = None,
    ) -> list[AtomicFact]:
        return list(facts_in((await self._facts_view(user_id)).timelines, subject, at, now))

    async def fact_history(self, user_id: str, subject: str, attribute: str) -> list[AtomicFact]:
        timelines = (await self._facts_view(user_id)).timelines
        return list(history_in(timelines, subject, attribute))

    async def fact_versions(self, user_id: str) -> list[AtomicFact]:
        return list(versions_in((await self._facts_view(user_id)).timelines))

    async def entity_index(self, user_id: str) -> EntityIndex:
        return (await self._entities_view(user_id)).index

    async def entities(self, user_id: str) -> list[Entity]:
        return entities_by_key(await self.entity_index(user_id))

    async def entity(self, user_id: str, name: str) -> Entity | None:
        return named_entity(await self.entity_index(user_id), name)

    async def slot_facts(
        self, user_id: str, slots: Collection[tuple[str, str]], leaf_ids: Collection[str]
    ) -> dict[str, tuple[AtomicFact, ...]]:
        """Only the L1s of the slots asked (and of those `leaf_ids` stated, their subjects'
        endings, and every slot of a subject whose ending is asked) are read, through the
        slot index; facts written before the index existed are all read."""
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
        said = [(f["subject"], f["attribute"]) for doc in docs.values() for f in json.loads(doc)]
        wanted, whole = facts_needed(slots, said)
        starts = [keys.fact_slot_member(s, a) for s, a in wanted if s not in whole]
        starts += [keys.fact_subject_prefix(subject) for subject in whole]
        pipe = self._r.pipeline(transaction=False)
        for start in sorted(s.encode() for s in starts):
            pipe.zrangebylex(index, b"[" + start, b"[" + start + b"\xff")
        found = {
            keys.leaf_of_fact_slot(text(m)) for members in await pipe.execute() for m in members
        }
        missing = sorted(found - docs.keys())
        if missing:
            values = await done(self._r.hmget(facts_key, missing))
            docs |= {i: text(d) for i, d in zip(missing, values, strict=True) if d}
        return decode_slot_facts(docs, slots, leaf_ids)

    async def slot_heads(
        self, user_id: str, slots: Collection[tuple[str, str]]
    ) -> dict[tuple[str, str, str], SlotHead]:
        """One HMGET of the heads kept beside the slots' statements."""
        asked = sorted(slots)
        if not asked:
            return {}
        fields = [keys.fact_slot_member(s, a) for s, a in asked]
        docs = await done(self._r.hmget(self._key(user_id, keys.FACT_HEADS), fields))
        return {
            (user_id, s, a): decode_head(text(doc))
            for (s, a), doc in zip(asked, docs, strict=True)
            if doc is not None
        }

    async def facts_said(self, user_id: str, before: datetime) -> list[AtomicFact]:
        return said_before(await self._observations(user_id), before)

    async def _observations(self, user_id: str) -> list[AtomicFact]:
        return list((await self._facts_view(user_id)).observations)

    async def _facts_view(self, user_id: str) -> FactsView:
        return await self._view(
            user_id,
            keys.FACTS,
            self.knowledge_cache.facts(user_id),
            self.knowledge_cache.keep_facts,
            lambda held, docs: held.replaced({i: _facts_of(d) for i, d in docs.items()}),
            lambda docs: FactsView.of({i: _facts_of(d) for i, d in docs.items()}),
        )

    async def _entities_view(self, user_id: str) -> EntitiesView:
        return await self._view(
            user_id,
            keys.ENTITIES,
            self.knowledge_cache.entities(user_id),
            self.knowledge_cache.keep_entities,
            lambda held, docs: held.replaced({i: _surfaces_of(d) for i, d in docs.items()}),
            lambda docs: EntitiesView.of(
                {i: decode_leaf_entities(json.loads(d)) for i, d in docs.items()}
            ),
        )

    async def _view(
        self,
        user_id: str,
        hash_key: str,
        held: Held[View] | None,
        keep: Callable[[str, bytes | None, View], None],
        step: Callable[[View, dict[str, str | None]], View],
        whole: Callable[[dict[str, str]], View],
    ) -> View:
        """One part of the user's knowledge (the hash `hash_key`): the held view stepped
        forward over the fields changed since its revision, or derived whole when it cannot
        be; kept in the cache at the revision read."""
        if held is not None:
            found = await self._stepped(user_id, held.revision, hash_key)
            if found is not None:
                current, docs = found
                if not docs:
                    return held.view
                view = step(held.view, docs)
                keep(user_id, current, view)
                return view
        revision, raw = await self._read(user_id, hash_key)
        view = whole({text(i): text(d) for i, d in raw.items()})
        keep(user_id, revision, view)
        return view

    async def _stepped(
        self, user_id: str, held: bytes, hash_key: str
    ) -> tuple[bytes, dict[str, str | None]] | None:
        """The current revision and the fields of `hash_key` changed since revision `held`
        (none: nothing changed); None when the log cannot tell, or the user is gone. One
        round trip: a script reads the revision, the log and the fields it names at once;
        `changed_since` checks what the script named, and a read it would not name alike
        derives whole."""
        client = await self._client_for(user_id)
        reply = await _run_stepped(
            client,
            self._key(user_id, keys.KNOWLEDGE_REVISION),
            self._key(user_id, keys.KNOWLEDGE_CHANGES),
            self._key(user_id, hash_key),
            held,
        )
        current = reply[0] if reply else None
        if current is None:
            self.knowledge_cache.drop(user_id)  # forgotten: nothing of it is kept
            return None
        if current == held:
            return current, {}
        changed = changed_since(reply[1], held, current) if len(reply) > 1 else None
        if not changed or len(reply) < 4:  # the log cannot tell, or names no L1
            return None
        named = [text(i) for i in reply[2]]
        if set(named) != changed:  # never: the script reads the same log
            return None
        return current, {
            i: text(d) if d is not None else None for i, d in zip(named, reply[3], strict=True)
        }

    async def _read(self, user_id: str, hash_key: str) -> tuple[bytes | None, dict[Any, Any]]:
        """One of the knowledge hashes and the revision it is at, read together (atomic)."""
        pipe = (await self._client_for(user_id)).pipeline(transaction=True)
        pipe.get(self._key(user_id, keys.KNOWLEDGE_REVISION))
        pipe.hgetall(self._key(user_id, hash_key))
        revision, raw = await pipe.execute()
        if revision is None:
            self.knowledge_cache.drop(user_id)  # forgotten: nothing of it is kept
        return revision, raw


def _facts_of(doc: str | None) -> tuple[AtomicFact, ...]:
    return tuple(decode_fact(f) for f in json.loads(doc)) if doc else ()


def _surfaces_of(doc: str | None) -> LeafEntities | None:
    return decode_leaf_entities(json.loads(doc)) if doc else None


# `_stepped` in one round trip, atomic as a transaction: KEYS revision, change log, hash;
# ARGV the revision held. Replies {current} when nothing changed or the user is gone (nil),
# {current, entries} when the log names no L1s after the revision held, else {current,
# entries, the L1s named, their fields}. The fields are read a thousand at a time
# (Lua's unpack has a bounded stack).
_STEPPED = """
local current = redis.call('GET', KEYS[1])
if not current or current == ARGV[1] then return {current} end
local entries = redis.call('LRANGE', KEYS[2], 0, -1)
local named, seen, after = {}, {}, false
for _, raw in ipairs(entries) do
  local entry = cjson.decode(raw)
  if after then
    if type(entry.leaves) ~= 'table' then return {current, entries} end
    for _, id in ipairs(entry.leaves) do
      if not seen[id] then seen[id] = true; named[#named + 1] = id end
    end
  elseif entry.revision == ARGV[1] then
    after = true
  end
end
if #named == 0 then return {current, entries} end
local docs = {}
for first = 1, #named, 1000 do
  local part = redis.call('HMGET', KEYS[3], unpack(named, first, math.min(first + 999, #named)))
  for i = 1, #part do docs[#docs + 1] = part[i] end
end
return {current, entries, named, docs}
"""
_STEPPED_SHA = hashlib.sha1(_STEPPED.encode()).hexdigest()


async def _run_stepped(client: Any, *args: str | bytes) -> list[Any]:
    """The `_STEPPED` script's reply: by its digest, sent whole once if the server lacks it."""
    try:
        return list(await client.evalsha(_STEPPED_SHA, 3, *args))
    except NoScriptError:
        return list(await client.eval(_STEPPED, 3, *args))
