"""What the Redis tree store keeps across users (the due index, the rebuild queue, the
degraded nodes) and forgetting a user for good (`keys` lists every key)."""

from __future__ import annotations

import heapq
import json
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from redis.exceptions import WatchError

from memstream.adapters.redis import keys
from memstream.adapters.redis.base import done, text, tombstone_of
from memstream.adapters.redis.directory import RedisDirectory
from memstream.domain.forgetting import Forgotten, Tombstone
from memstream.domain.models import Level
from memstream.domain.rebuild import RebuildJob

# Node ids whose markers one SREM of a forget removes.
_MARKER_CHUNK = 500


class RedisUsers(RedisDirectory):
    """`ports.DueIndex`, `ports.RebuildQueue`, `ports.Forgetting` (and, from
    `RedisDirectory`, `ports.UserDirectory`)."""

    async def due_users(self, now: datetime, limit: int = 10_000) -> list[str]:
        return await self._earliest(keys.due, now.timestamp(), limit)

    async def open_window_counts(
        self, *, max_users: int = 100_000, chunk: int = 500
    ) -> Counter[int]:
        """Open windows per level, over every user with something open.

        A user with an open window always has an entry in the due index (an open session or
        calendar window always has a time the clock may close it), so that index lists whom
        to read; their states are fetched in pipelined chunks.
        """
        users = await self.due_users(datetime.max.replace(tzinfo=UTC), limit=max_users)
        counts: Counter[int] = Counter()
        for start in range(0, len(users), chunk):
            pipe = self._r.pipeline(transaction=False)
            for user in users[start : start + chunk]:
                pipe.get(self._key(user, keys.STATE))
            for raw in await pipe.execute():
                if raw:
                    for window in json.loads(raw).get("open_windows", {}).values():
                        counts[int(window["level"])] += 1
        return counts

    async def degraded(self, limit: int = 1000) -> list[tuple[str, str]]:
        if self._cluster:
            parts = await self._each_slot(keys.degraded, "SRANDMEMBER", limit)
            return [keys.decode_member(r) for part in parts for r in part][:limit]
        raw = await done(self._r.srandmember(keys.degraded(self._ns), limit))
        return [keys.decode_member(r) for r in raw or []]

    async def rebuild_job(self, user_id: str) -> RebuildJob | None:
        raw = await self._r.get(self._key(user_id, keys.REBUILD))
        return RebuildJob.from_json(json.loads(raw)) if raw else None

    async def rebuild_leaves(self, user_id: str, start: int, stop: int) -> list[str]:
        if stop <= start:
            return []
        ids = await done(self._r.lrange(self._key(user_id, keys.REBUILD_LEAVES), start, stop - 1))
        return [text(i) for i in ids]

    async def rebuild_windows(self, user_id: str) -> list[str]:
        ids = await done(self._r.lrange(self._key(user_id, keys.REBUILD_WINDOWS), 0, -1))
        return [text(i) for i in ids]

    async def rebuilds_due(self, now: float, limit: int) -> list[str]:
        return await self._earliest(keys.rebuilds, now, limit)

    async def lease_rebuild(self, user_id: str, until: float) -> None:
        await self._r.zadd(self._across_users(keys.rebuilds, user_id), {user_id: until}, xx=True)

    async def rebuilding_users(self, limit: int = 10_000) -> list[str]:
        return await self._earliest(keys.rebuilds, float("inf"), limit)

    async def _earliest(
        self, index: Callable[[str, int | None], str], until: float, limit: int
    ) -> list[str]:
        """Up to `limit` users of a sorted index scored at most `until`, by score then id
        (Redis's order of one sorted set, kept across a cluster's slots by merging)."""
        if limit <= 0:
            return []
        if not self._cluster:
            key = index(self._ns, None)
            return [text(r) for r in await self._r.zrangebyscore(key, "-inf", until, 0, limit)]
        highest = "+inf" if until == float("inf") else until
        parts = await self._each_slot(
            index, "ZRANGEBYSCORE", "-inf", highest, "WITHSCORES", "LIMIT", 0, limit
        )
        scored = heapq.nsmallest(
            limit,
            ((float(part[i + 1]), part[i]) for part in parts for i in range(0, len(part), 2)),
        )
        return [text(member) for _, member in scored]

    async def settle_rebuild(self, user_id: str, rebuild_id: str | None) -> bool:
        key = self._key(user_id, keys.REBUILD)
        client = await self._client_for(user_id)
        async with self._transaction(client) as pipe:
            try:
                await pipe.watch(key)  # a new job committed before EXEC aborts the settling
                raw = await pipe.get(key)
                job = RebuildJob.from_json(json.loads(raw)) if raw else None
                if job is not None and (job.rebuild_id != rebuild_id or not job.finished):
                    return False
                pipe.multi()
                pipe.zrem(self._across_users(keys.rebuilds, user_id), user_id)
                await pipe.execute()
                return True
            except WatchError:
                return False

    async def delete_user(self, user_id: str) -> int:
        """Remove every key of the user; returns how many keys were deleted."""
        return (await self._remove(user_id, None, None)).redis_keys

    async def forget(self, user_id: str, tombstone: Tombstone, ttl_s: int | None) -> Forgotten:
        """Every key of the user goes and the tombstone is written, in one transaction."""
        return await self._remove(user_id, tombstone, ttl_s)

    async def _degraded_ids(self, pipe: Any, user_id: str, suffixes: set[str]) -> list[str]:
        """The ids whose markers a forget removes from the set of all users: every node of
        the user and those its own degraded index names (their nodes may be gone already)."""
        marked = {text(i) for i in await done(pipe.smembers(self._key(user_id, keys.DEGRADED)))}
        prefix = keys.node("")
        marked.update(k[len(prefix) :] for k in suffixes if k.startswith(prefix))
        return sorted(marked)

    def _queue_unmarked(self, pipe: Any, user_id: str, node_ids: list[str]) -> None:
        """SREM of the nodes' markers (both formats), by id: never a read of the set of all
        users, which grows with every user's degraded nodes. In chunks: one command stays
        bounded for a user of many nodes."""
        degraded = self._across_users(keys.degraded, user_id)
        for start in range(0, len(node_ids), _MARKER_CHUNK):
            chunk = node_ids[start : start + _MARKER_CHUNK]
            pipe.srem(
                degraded,
                *(keys.degraded_member(user_id, i) for i in chunk),
                *(keys.legacy_member(user_id, i) for i in chunk),
            )

    async def tombstone(self, user_id: str) -> Tombstone | None:
        return tombstone_of(await self._r.get(self._key(user_id, keys.TOMBSTONE)))

    async def _remove(
        self, user_id: str, tombstone: Tombstone | None, ttl_s: int | None
    ) -> Forgotten:
        """The user's keys are its fixed ones, the registered ones and, for nodes written
        before the registry, those its level indexes name: found without a keyspace SCAN,
        so a glob character in an id cannot reach another user. WATCH on the registry: a
        commit that creates a key between the reading and the delete makes it read again."""
        p = keys.user_prefix(user_id, self._ns)
        levels = [p + keys.level(level) for level in Level]
        client = await self._client_for(user_id)
        async with self._transaction(client) as pipe:
            while True:
                try:
                    await pipe.watch(p + keys.KEYS, p + keys.DEGRADED, *levels)
                    suffixes = {text(k) for k in await done(pipe.smembers(p + keys.KEYS))}
                    node_ids: set[str] = set()
                    for level_key in levels:
                        node_ids.update(text(i) for i in await pipe.zrange(level_key, 0, -1))
                    suffixes.update(keys.node(i) for i in node_ids)
                    suffixes.update(keys.children(i) for i in node_ids)
                    names = [p + k for k in (*keys.FIXED_SUFFIXES, *suffixes)] + levels
                    marked = await self._degraded_ids(pipe, user_id, suffixes)
                    pipe.multi()
                    pipe.delete(*names)
                    self._queue_unmarked(pipe, user_id, marked)
                    pipe.zrem(self._across_users(keys.due, user_id), user_id)
                    pipe.zrem(self._across_users(keys.rebuilds, user_id), user_id)
                    pipe.zrem(self._across_users(keys.users, user_id), user_id)
                    if tombstone is not None:
                        doc = json.dumps(tombstone.to_json())
                        pipe.set(p + keys.TOMBSTONE, doc, ex=ttl_s)
                    deleted, *_ = await pipe.execute()
                    break
                except WatchError:
                    continue
        return Forgotten(
            nodes=len(node_ids),
            redis_keys=int(deleted),
            tombstone_ttl_s=ttl_s if tombstone else None,
        )
