"""Counting what a Redis client reads: replies and their bytes, over every connection of the
client made with `connection_class=CountingConnection` (the traffic tests bound them)."""

from __future__ import annotations

from typing import Any

from redis.asyncio.connection import Connection


class Traffic:
    """Replies read and their bytes, over every connection of one client."""

    replies = 0
    bytes = 0


def _size(reply: Any) -> int:
    if isinstance(reply, bytes | str):
        return len(reply)
    if isinstance(reply, list | tuple):
        return sum(_size(r) for r in reply)
    return 8


class CountingConnection(Connection):
    async def read_response(self, *args: Any, **kwargs: Any) -> Any:
        reply = await super().read_response(*args, **kwargs)
        Traffic.replies += 1
        Traffic.bytes += _size(reply)
        return reply
