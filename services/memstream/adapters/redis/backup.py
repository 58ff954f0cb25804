"""The reads of a backup in Redis (`ports.BackupReads`): pages of a user's nodes with their
fingerprints, the knowledge of given L1s, deadlines and the due time (`keys` lists them)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

from memstream.adapters.redis import keys
from memstream.adapters.redis.base import RedisBase, done, text
from memstream.contracts.codec import decode_node
from memstream.contracts.knowledge_codec import decode_fact, decode_leaf_entities
from memstream.domain.entity_index import LeafEntities
from memstream.domain.knowledge import LeafKnowledge
from memstream.domain.models import StoredNode


class RedisBackupReads(RedisBase):
    """`ports.BackupReads` past the node reads it shares with the workers."""

    async def due_at(self, user_id: str) -> datetime | None:
        score = await done(self._r.zscore(self._across_users(keys.due, user_id), user_id))
        return None if score is None else datetime.fromtimestamp(float(score), UTC)

    async def stored_nodes(self, user_id: str, node_ids: Sequence[str]) -> list[StoredNode]:
        if not node_ids:
            return []
        p = keys.user_prefix(user_id, self._ns)
        found: list[StoredNode] = []
        for raw in await self._r.mget([p + keys.node(i) for i in node_ids]):
            if raw is not None:
                doc = json.loads(raw)
                found.append(StoredNode(decode_node(doc), doc.get("fingerprint", "")))
        return found

    async def leaf_knowledge(
        self, user_id: str, leaf_ids: Sequence[str]
    ) -> dict[str, LeafKnowledge]:
        if not leaf_ids:
            return {}
        p = keys.user_prefix(user_id, self._ns)
        pipe = (await self._client_for(user_id)).pipeline(transaction=True)
        pipe.hmget(p + keys.FACTS, list(leaf_ids))
        pipe.hmget(p + keys.ENTITIES, list(leaf_ids))
        facts, entities = await pipe.execute()
        said: dict[str, LeafKnowledge] = {}
        for leaf_id, fact_doc, entity_doc in zip(leaf_ids, facts, entities, strict=True):
            if fact_doc is None and entity_doc is None:
                continue
            said[leaf_id] = LeafKnowledge(
                tuple(decode_fact(f) for f in json.loads(fact_doc)) if fact_doc else (),
                decode_leaf_entities(json.loads(entity_doc))
                if entity_doc
                else LeafEntities((), ()),
            )
        return said

    async def expiry_page(self, user_id: str, offset: int, limit: int) -> list[tuple[str, float]]:
        raw = await self._r.zrange(
            self._key(user_id, keys.EXPIRY), offset, offset + limit - 1, withscores=True
        )
        return [(text(member), float(score)) for member, score in raw]
