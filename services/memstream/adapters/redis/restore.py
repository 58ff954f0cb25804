"""The tree written back from the index after Redis lost it (`ports.repair.TreeRestore`)."""

from __future__ import annotations

from collections.abc import Sequence

from memstream.adapters.redis import keys
from memstream.adapters.redis.base import text
from memstream.adapters.redis.nodes import RedisNodes
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

    async def restore_nodes(self, user_id: str, nodes: Sequence[StoredNode]) -> None:
        """The nodes as they are, through the consolidator's commit (links, level indexes,
        the message index of the L1s, degraded markers): no version changes, no event."""
        await self.commit_nodes(user_id, nodes, outbox=[])
