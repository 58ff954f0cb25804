"""Counting what a Redis client reads: replies and their bytes, over every connection of the
client made with `connection_class=CountingConnection` (the traffic tests bound them)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import redis.asyncio as aioredis
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


@asynccontextmanager
async def counting_client(url: str, prefix: str) -> AsyncIterator[tuple[aioredis.Redis, str]]:
    """A client whose reads `Traffic` counts, and a namespace of its own under `prefix`,
    whose keys are deleted on exit."""
    pool = aioredis.ConnectionPool.from_url(url, connection_class=CountingConnection)
    client = aioredis.Redis(connection_pool=pool)
    namespace = f"{prefix}-{uuid.uuid4().hex[:12]}"
    try:
        yield client, namespace
    finally:
        names = [k async for k in client.scan_iter(match=f"{namespace}:*")]
        if names:
            await client.delete(*names)
        await client.aclose()
