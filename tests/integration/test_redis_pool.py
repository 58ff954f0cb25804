"""A bounded Redis pool: every connection opened at start, and a burst of commands waits for
them instead of opening more (each a connect and a handshake on the event loop)."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from memstream.adapters.redis.connection import open_client, open_pool
from memstream.settings import Settings

pytestmark = pytest.mark.integration

BURST = 200


async def _connected(observer: aioredis.Redis) -> int:
    return int((await observer.info("clients"))["connected_clients"])


@pytest.mark.parametrize(("bound", "opened_at_most"), [(4, 4), (0, BURST)])
async def test_a_burst_opens_no_connection_beyond_the_pool(
    stack_settings: Settings, bound: int, opened_at_most: int
) -> None:
    observer = aioredis.from_url(stack_settings.redis.url, single_connection_client=True)
    client = open_client(stack_settings.redis.url, connections=bound)
    try:
        before = await _connected(observer)
        await open_pool(client)
        assert await _connected(observer) - before == bound  # all of them, up front
        replies = await asyncio.gather(*(client.echo(f"n{n}") for n in range(BURST)))
        assert replies == [f"n{n}".encode() for n in range(BURST)]
        opened = await _connected(observer) - before
        if bound:
            assert opened == bound
        else:  # unbounded: the burst opened connections of its own
            assert bound < opened <= opened_at_most
    finally:
        await client.aclose()
        await observer.aclose()
