"""What every part of the Redis tree store shares: the client, the key names, the clock,
and the one way a user's writes go in (one transaction, guarded by its tombstone)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.exceptions import WatchError

from memstream.adapters.redis import keys
from memstream.adapters.redis.knowledge_cache import DEFAULT_USERS, KnowledgeCache
from memstream.adapters.redis.node_cache import DEFAULT_MAX_BYTES, NodeDecodeCache
from memstream.domain.forgetting import Guard, Tombstone

T = TypeVar("T")

MARK_BITS = 21  # 32 bits of seconds (until 2106) + 21 = 53: exact in a double
MARK_MASK = (1 << MARK_BITS) - 1
SEEN_HORIZON = timedelta(days=8)  # the turns topic's 7 days of retention, plus one
SEEN_MAX = 200_000  # markers per user, whatever the rate: about 10 MB at most


async def done(result: Awaitable[T] | T) -> T:
    """redis-py types its commands as sync-or-async; on the asyncio client they await."""
    return await result if inspect.isawaitable(result) else result


def text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


def tombstone_of(raw: bytes | str | None) -> Tombstone | None:
    return Tombstone.from_json(json.loads(raw)) if raw else None


class RedisBase:
    def __init__(
        self,
        client: aioredis.Redis,
        namespace: str = keys.DEFAULT_NAMESPACE,
        *,
        seen_horizon: timedelta = SEEN_HORIZON,
        seen_max: int = SEEN_MAX,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        node_cache_size: int | None = None,
        node_cache_bytes: int = DEFAULT_MAX_BYTES,
        knowledge_cache_users: int = DEFAULT_USERS,
    ) -> None:
        self._r = client
        # Nodes read again are not decoded again (see node_cache.py: a hit needs equal bytes).
        self.node_cache = NodeDecodeCache(node_cache_size, max_bytes=node_cache_bytes)
        # What reads derive of a user's knowledge, while its revision stays the same.
        self.knowledge_cache = KnowledgeCache(knowledge_cache_users)
        self._seen_horizon_s = int(seen_horizon.total_seconds())
        self._seen_max = seen_max
        self._clock = clock
        # A namespace lets deployments (or tests) share one Redis without seeing each other.
        self._ns = namespace
        self._due = keys.due(namespace)
        self._degraded = keys.degraded(namespace)
        self._rebuilds = keys.rebuilds(namespace)

    def _key(self, user_id: str, suffix: str) -> str:
        return keys.user_prefix(user_id, self._ns) + suffix

    async def ping(self) -> bool:
        return bool(await done(self._r.ping()))

    async def _commit(self, user_id: str, queue: Any, guard: Guard | None) -> bool:
        """Run `queue`'s writes in one transaction; with a guard, only while the user's
        tombstone is the guard's (WATCH: a forget landing before EXEC aborts it, and the
        check runs again, now seeing the forget)."""
        if guard is None:
            pipe = self._r.pipeline(transaction=True)
            queue(pipe)
            await pipe.execute()
            return True
        key = self._key(user_id, keys.TOMBSTONE)
        async with self._r.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(key)
                    if not guard.allows(tombstone_of(await pipe.get(key))):
                        return False
                    pipe.multi()
                    queue(pipe)
                    await pipe.execute()
                    return True
                except WatchError:
                    continue
