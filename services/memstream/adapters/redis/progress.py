"""`ports.ProgressMarks` and `ports.ProgressReads` in Redis: the segmenter's committed
offsets per turns partition, and the messages a user's window state holds back.

The marks of every turns topic are fields of one hash (`keys.progress_field`): the shared
topic's named by the partition alone, as before there were tenants' topics, a tenant's
topic's by the topic and the partition. One hash: a read of several topics' marks is one
HMGET, and the key stays one on Redis Cluster."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from memstream.adapters.redis import keys
from memstream.adapters.redis.base import RedisBase, done
from memstream.contracts.held import held_in_state
from memstream.domain.write_token import HeldMessages


class RedisProgress(RedisBase):
    async def mark_progress(
        self, next_offsets: Mapping[int, int], topic: str | None = None
    ) -> None:
        if next_offsets:
            mapping = {keys.progress_field(p, topic): o for p, o in next_offsets.items()}
            await done(self._r.hset(keys.progress(self._ns), mapping=mapping))

    async def progress(self, partitions: Sequence[int], topic: str | None = None) -> dict[int, int]:
        asked = list(dict.fromkeys(partitions))
        if not asked:
            return {}
        fields = [keys.progress_field(p, topic) for p in asked]
        raw = await done(self._r.hmget(keys.progress(self._ns), fields))
        return {p: int(o) for p, o in zip(asked, raw, strict=True) if o is not None}

    async def held_messages(self, user_id: str) -> HeldMessages:
        raw = await self._r.get(self._key(user_id, keys.STATE))
        return held_in_state(json.loads(raw)) if raw else HeldMessages()
