"""The tree written back from the index after Redis lost it (`ports.repair.TreeRestore`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memstream.adapters.redis import keys
from memstream.adapters.redis.base import text
from memstream.adapters.redis.knowledge import queue_knowledge
from memstream.adapters.redis.nodes import RedisNodes
from memstream.domain.forgetting import Guard
from memstream.domain.knowledge import KnowledgeChange
from memstream.domain.models import StoredNode


class RedisRestore(RedisNodes):
    async def users_with_nodes(self, limit: int, page: int = 1000) -> list[str]:
        """Up to `limit` users with nodes: each has its set of key suffixes (`keys.KEYS`),
        written with its first node. A SCAN, stopped as soon as `limit` are found."""
        prefix, suffix = f"{self._ns}:{{", "}:" + keys.KEYS
        found: dict[str, None] = {}
        async for key in self._r.scan_iter(match=f"{prefix}*{suffix}", count=page):
            found[text(key)[len(prefix) : -len(suffix)]] = None
            if len(found) >= limit:
                break
        return sorted(found)

    async def restore_nodes(
        self,
        user_id: str,
        nodes: Sequence[StoredNode],
        knowledge: KnowledgeChange | None,
        guard: Guard,
    ) -> bool:
        """The nodes as they are (no version changes, no event), with their links, level
        indexes, the message index of the L1s and the degraded markers, and the knowledge
        of the L1s when given, in one transaction, unless `guard` refuses it."""
        for stored in nodes:
            if stored.node.user_id != user_id:
                raise ValueError(f"node {stored.node.id} belongs to another user")

        def queue(pipe: Any) -> None:
            self._queue_nodes(pipe, user_id, [(s.node, s.fingerprint) for s in nodes])
            # A tree written back after Redis was lost is found by the operators' search too.
            pipe.zadd(self._across_users(keys.users, user_id), {user_id: 0})
            self._queue_degraded(pipe, user_id, [s.node for s in nodes if s.node.degraded])
            if knowledge is not None:
                queue_knowledge(pipe, keys.user_prefix(user_id, self._ns), knowledge)

        return await self._commit(user_id, queue, guard)
