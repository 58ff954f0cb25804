"""A pooled connection's check for unread bytes: answered without a turn of the event loop
when nothing is there, and still caught, the connection opened again, when a reply is."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.connection import Connection

from memstream.adapters.redis.connection import HiredisPackedConnection
from memstream.settings import Settings

pytestmark = pytest.mark.integration


@pytest.fixture
async def client(stack_settings: Settings) -> AsyncIterator[aioredis.Redis]:
    opened = aioredis.from_url(stack_settings.redis.url, connection_class=HiredisPackedConnection)
    try:
        yield opened
    finally:
        await opened.aclose()


async def test_a_connection_with_nothing_unread_is_not_polled_by_redis_py(
    client: aioredis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    await client.set("unread-replies:k", "v")
    polled: list[object] = []
    original = Connection.can_read_destructive

    async def polling(self: Connection) -> Any:
        polled.append(self)
        return await original(self)

    monkeypatch.setattr(Connection, "can_read_destructive", polling)
    for _ in range(3):
        assert await client.get("unread-replies:k") == b"v"
    assert polled == []


async def test_a_reply_left_unread_is_caught_and_the_connection_opened_again(
    client: aioredis.Redis,
) -> None:
    await client.set("unread-replies:k", "v")
    pool = client.connection_pool
    connection = await pool.get_connection()
    await connection.send_command("GET", "unread-replies:k")  # its reply never read
    deadline = asyncio.get_running_loop().time() + 10
    # Until the loop has read it off the socket, as a reply left by an earlier command is.
    while not connection._reader._buffer:  # type: ignore[attr-defined]
        assert asyncio.get_running_loop().time() < deadline, "the reply never arrived"
        await asyncio.sleep(0.005)
    assert not connection._nothing_to_read()  # type: ignore[attr-defined]
    assert await connection.can_read_destructive()
    await pool.release(connection)
    await client.set("unread-replies:k", "w")  # answered, not with the stale reply
    assert await client.get("unread-replies:k") == b"w"
