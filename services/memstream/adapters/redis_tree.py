"""The tree's structure and the workers' state in Redis.

Every per-user key carries the `{user_id}` hash tag, so one user's keys live in one Redis
Cluster slot and a user's whole write is one MULTI/EXEC transaction. Layout:

    ms:{u}:state            JSON of the window reducer's state
    ms:{u}:seen             set of processed event ids (idempotency markers)
    ms:{u}:outbox           list of JSON events written but not yet published
    ms:{u}:node:<id>        JSON of a memory node (text included: recall climbs the tree here)
    ms:{u}:children:<id>    set of child ids of a node (filled before the node itself exists)
    ms:{u}:level:<n>        sorted set of node ids by t_end (epoch seconds)
    ms:{u}:profile          id of the newest L5 profile
    ms:due                  sorted set: user -> earliest wall-clock time a tick may close something
    ms:degraded             set of "user|node id" written by the offline fallback
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import redis.asyncio as aioredis

from memstream.codec import decode_node, encode_node
from memstream.domain.models import Level, MemoryNode

T = TypeVar("T")

DUE_KEY = "ms:due"
DEGRADED_KEY = "ms:degraded"


async def _done(result: Awaitable[T] | T) -> T:
    """redis-py types its commands as sync-or-async; on the asyncio client they await."""
    return await result if inspect.isawaitable(result) else result


def user_prefix(user_id: str) -> str:
    return f"ms:{{{user_id}}}:"


@dataclass(frozen=True, slots=True)
class StoredNode:
    node: MemoryNode
    fingerprint: str


class RedisTree:
    """Tree links, time indexes, window state and idempotency markers."""

    def __init__(self, client: aioredis.Redis) -> None:
        self._r = client

    async def ping(self) -> bool:
        return bool(await _done(self._r.ping()))

    # --- segmenter state -------------------------------------------------------------------

    async def load_state(self, user_id: str) -> dict[str, Any] | None:
        raw = await self._r.get(user_prefix(user_id) + "state")
        return json.loads(raw) if raw else None

    async def unseen(self, user_id: str, event_ids: Sequence[str]) -> list[bool]:
        """For each event id, whether it has not been processed yet."""
        if not event_ids:
            return []
        flags = await _done(self._r.smismember(user_prefix(user_id) + "seen", list(event_ids)))
        return [not f for f in flags]

    async def commit_user(
        self,
        user_id: str,
        *,
        state: dict[str, Any],
        seen: Iterable[str],
        nodes: Sequence[MemoryNode],
        outbox: Sequence[dict[str, Any]],
        due: datetime | None,
    ) -> None:
        """Write one user's new state, nodes, markers and outgoing events atomically."""
        p = user_prefix(user_id)
        pipe = self._r.pipeline(transaction=True)
        pipe.set(p + "state", json.dumps(state))
        seen = list(seen)
        if seen:
            pipe.sadd(p + "seen", *seen)
        for node in nodes:
            self._queue_node(pipe, node, fingerprint="")
        if outbox:
            pipe.rpush(p + "outbox", *(json.dumps(e) for e in outbox))
        if due is None:
            pipe.zrem(DUE_KEY, user_id)
        else:
            pipe.zadd(DUE_KEY, {user_id: due.timestamp()})
        await pipe.execute()

    async def outbox(self, user_id: str) -> list[dict[str, Any]]:
        raw = await _done(self._r.lrange(user_prefix(user_id) + "outbox", 0, -1))
        return [json.loads(r) for r in raw]

    async def clear_outbox(self, user_id: str, count: int) -> None:
        await _done(self._r.ltrim(user_prefix(user_id) + "outbox", count, -1))

    async def due_users(self, now: datetime, limit: int = 10_000) -> list[str]:
        raw = await self._r.zrangebyscore(DUE_KEY, "-inf", now.timestamp(), start=0, num=limit)
        return [r.decode() if isinstance(r, bytes) else r for r in raw]

    # --- nodes -----------------------------------------------------------------------------

    async def save_node(self, node: MemoryNode, fingerprint: str) -> None:
        pipe = self._r.pipeline(transaction=True)
        self._queue_node(pipe, node, fingerprint)
        marker = f"{node.user_id}|{node.id}"
        if node.degraded:
            pipe.sadd(DEGRADED_KEY, marker)
        else:
            pipe.srem(DEGRADED_KEY, marker)
        await pipe.execute()

    def _queue_node(self, pipe: Any, node: MemoryNode, fingerprint: str) -> None:
        p = user_prefix(node.user_id)
        doc = encode_node(node) | {"fingerprint": fingerprint}
        pipe.set(p + f"node:{node.id}", json.dumps(doc))
        pipe.zadd(p + f"level:{int(node.level)}", {node.id: node.t_end.timestamp()})
        if node.parent_id:
            pipe.sadd(p + f"children:{node.parent_id}", node.id)
        if node.level == Level.MONTH:
            pipe.set(p + "profile", node.id)

    async def get(self, user_id: str, node_id: str) -> StoredNode | None:
        raw = await self._r.get(user_prefix(user_id) + f"node:{node_id}")
        if raw is None:
            return None
        doc = json.loads(raw)
        return StoredNode(decode_node(doc), doc.get("fingerprint", ""))

    async def get_many(self, user_id: str, node_ids: Sequence[str]) -> list[MemoryNode]:
        """The nodes that exist among `node_ids`, in the given order."""
        if not node_ids:
            return []
        p = user_prefix(user_id)
        raws = await self._r.mget([p + f"node:{i}" for i in node_ids])
        return [decode_node(json.loads(r)) for r in raws if r is not None]

    async def children_ids(self, user_id: str, node_id: str) -> list[str]:
        raw = await _done(self._r.smembers(user_prefix(user_id) + f"children:{node_id}"))
        return sorted(r.decode() if isinstance(r, bytes) else r for r in raw)

    async def recent(
        self, user_id: str, level: Level, count: int, before: datetime | None = None
    ) -> list[MemoryNode]:
        """The `count` newest nodes of a level ending before `before`, oldest first."""
        if count <= 0:
            return []
        top = f"({before.timestamp()}" if before else "+inf"
        ids = await self._r.zrevrangebyscore(
            user_prefix(user_id) + f"level:{int(level)}", top, "-inf", start=0, num=count
        )
        ids = [i.decode() if isinstance(i, bytes) else i for i in ids]
        return list(reversed(await self.get_many(user_id, ids)))

    async def level_ids(
        self,
        user_id: str,
        level: Level,
        start: float = float("-inf"),
        end: float = float("inf"),
        offset: int = 0,
        limit: int = 100,
    ) -> list[str]:
        ids = await self._r.zrangebyscore(
            user_prefix(user_id) + f"level:{int(level)}", start, end, start=offset, num=limit
        )
        return [i.decode() if isinstance(i, bytes) else i for i in ids]

    async def count(self, user_id: str, level: Level) -> int:
        return int(await self._r.zcard(user_prefix(user_id) + f"level:{int(level)}"))

    async def profile(self, user_id: str) -> MemoryNode | None:
        node_id = await self._r.get(user_prefix(user_id) + "profile")
        if node_id is None:
            return None
        nodes = await self.get_many(
            user_id, [node_id.decode() if isinstance(node_id, bytes) else node_id]
        )
        return nodes[0] if nodes else None

    async def degraded(self, limit: int = 1000) -> list[tuple[str, str]]:
        raw = await _done(self._r.srandmember(DEGRADED_KEY, limit))
        pairs = [(r.decode() if isinstance(r, bytes) else r).split("|", 1) for r in raw or []]
        return [(u, n) for u, n in pairs]

    # --- forgetting ------------------------------------------------------------------------

    async def delete_user(self, user_id: str) -> int:
        """Remove every key of the user; returns how many keys were deleted."""
        deleted = 0
        batch: list[bytes | str] = []
        async for key in self._r.scan_iter(
            match=_glob_escape(user_prefix(user_id)) + "*", count=500
        ):
            batch.append(key)
            if len(batch) >= 500:
                deleted += int(await self._r.delete(*batch))
                batch.clear()
        if batch:
            deleted += int(await self._r.delete(*batch))
        await self._r.zrem(DUE_KEY, user_id)
        members = await _done(self._r.smembers(DEGRADED_KEY))
        stale = [m for m in members if _member_user(m) == user_id]
        if stale:
            await _done(self._r.srem(DEGRADED_KEY, *stale))
        return deleted


def _member_user(member: bytes | str) -> str:
    text = member.decode() if isinstance(member, bytes) else member
    return text.split("|", 1)[0]


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
