"""`ports.ProgressMarks` and `ports.ProgressReads` in Redis: the segmenter's committed
offsets per turns partition, and the messages a user's window state holds back."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from memstream.adapters.redis import keys
from memstream.adapters.redis.base import RedisBase, done
from memstream.contracts.held import held_in_state
from memstream.domain.write_token import HeldMessages


class RedisProgress(RedisBase):
    async def mark_progress(self, next_offsets: Mapping[int, int]) -> None:
        if next_offsets:
            mapping = {str(p): o for p, o in next_offsets.items()}
            await done(self._r.hset(keys.progress(self._ns), mapping=mapping))

    async def progress(self, partitions: Sequence[int]) -> dict[int, int]:
        asked = list(dict.fromkeys(partitions))
        if not asked:
            return {}
        raw = await done(self._r.hmget(keys.progress(self._ns), [str(p) for p in asked]))
        return {p: int(o) for p, o in zip(asked, raw, strict=True) if o is not None}

    async def held_messages(self, user_id: str) -> HeldMessages:
        raw = await self._r.get(self._key(user_id, keys.STATE))
        return held_in_state(json.loads(raw)) if raw else HeldMessages()
