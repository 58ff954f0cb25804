"""The users registry and one user's overview (`ports.UserDirectory`).

The registry is a sorted set whose scores are all 0, so Redis orders it by the bytes of the
ids (UTF-8: code point order) and ZRANGEBYLEX pages through a prefix. The segmenter's
commit adds the user (`segmenter_state`); a forget removes it (`users`). An overview is one
pipelined read of the level indexes, the window state, the newest seen marker and the size of
the user's own degraded index (`keys.DEGRADED`: not the set of all users, which grows with
every user's degraded nodes), then one MGET of the first and last exchange.
"""

from __future__ import annotations

import heapq
import json
from datetime import UTC, datetime

from memstream.adapters.redis import keys
from memstream.adapters.redis.base import MARK_BITS, text
from memstream.adapters.redis.nodes import RedisNodes
from memstream.contracts.codec import decode_state
from memstream.domain.models import Level
from memstream.domain.user_overview import UserListing, UserOverview, pending_windows

# No id's UTF-8 holds this byte, so it sorts after every id that starts with a prefix.
_AFTER_EVERY_SUFFIX = b"\xff"


class RedisDirectory(RedisNodes):
    async def users(
        self, prefix: str = "", after: str | None = None, limit: int = 100
    ) -> list[UserListing]:
        if limit <= 0:
            return []
        low = b"[" + prefix.encode() if prefix else b"-"
        if after is not None and after >= prefix:
            low = b"(" + after.encode()
        high = b"[" + prefix.encode() + _AFTER_EVERY_SUFFIX if prefix else b"+"
        if self._cluster:
            parts = await self._each_slot(keys.users, "ZRANGEBYLEX", low, high, "LIMIT", 0, limit)
            # One sorted set is in byte order; the slots' parts are merged into it.
            found = [text(u) for u in heapq.nsmallest(limit, (u for p in parts for u in p))]
        else:
            raw = await self._r.zrangebylex(keys.users(self._ns), low, high, 0, limit)
            found = [text(u) for u in raw]
        pipe = self._r.pipeline(transaction=False)
        for user_id in found:
            pipe.zrevrange(self._key(user_id, keys.SEEN), 0, 0, withscores=True)
            pipe.zcard(self._key(user_id, keys.level(Level.SEGMENT)))
        replies = await pipe.execute()
        return [
            UserListing(user_id, _written_at(seen), int(memories))
            for user_id, seen, memories in zip(found, replies[::2], replies[1::2], strict=True)
        ]

    async def user_overview(self, user_id: str) -> UserOverview | None:
        p = keys.user_prefix(user_id, self._ns)
        leaves = p + keys.level(Level.SEGMENT)
        pipe = self._r.pipeline(transaction=False)
        for level in Level:
            pipe.zcard(p + keys.level(level))
        pipe.get(p + keys.STATE)
        pipe.zrevrange(p + keys.SEEN, 0, 0, withscores=True)
        pipe.zrange(leaves, 0, 0)
        pipe.zrevrange(leaves, 0, 0)
        pipe.scard(p + keys.DEGRADED)
        *sizes, state, seen, first, last, degraded = await pipe.execute()
        counts = {level: int(n) for level, n in zip(Level, sizes, strict=True)}
        if state is None and not any(counts.values()):
            return None
        ends = await self.get_many(user_id, [text(i) for i in (*first, *last)])
        return UserOverview(
            user_id=user_id,
            counts=counts,
            first_at=ends[0].t_start if ends else None,
            last_at=ends[-1].t_end if ends else None,
            last_written_at=_written_at(seen),
            pending_windows=pending_windows(decode_state(json.loads(state)) if state else None),
            degraded=int(degraded),
        )

    async def register_users(self) -> int:
        users = await self.all_users()
        if not users:
            return 0
        pipe = self._r.pipeline(transaction=False)
        for user_id in users:
            pipe.zadd(self._across_users(keys.users, user_id), {user_id: 0})
        return sum(int(added) for added in await pipe.execute())

    async def all_users(self, page: int = 1000) -> list[str]:
        """Every user with a window state, sorted: what `memstream rebuild --all` rebuilds.
        (A SCAN of the keyspace: an operator's command, never on a per-user path.)"""
        prefix, suffix = f"{self._ns}:{{", "}:state"
        users = {
            text(key)[len(prefix) : -len(suffix)]
            async for key in self._r.scan_iter(match=f"{prefix}*{suffix}", count=page)
        }
        return sorted(users)


def _written_at(newest_seen: list[tuple[bytes, float]]) -> datetime | None:
    """When the newest seen marker was committed (its score's high bits), if any."""
    if not newest_seen:
        return None
    return datetime.fromtimestamp(int(newest_seen[0][1]) >> MARK_BITS, UTC)
