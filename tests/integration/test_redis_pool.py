"""Connections opened at start: a burst of commands up to that many at once opens none
(each a connect and a handshake on the event loop); the pool still grows past them."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from memstream.adapters.redis.connection import open_client, open_pool
from memstream.settings import Settings
from memstream.wiring.container import connect

pytestmark = pytest.mark.integration

OPENED = 16


async def _connected(observer: aioredis.Redis) -> int:
    return int((await observer.info("clients"))["connected_clients"])


async def _burst(client: aioredis.Redis, size: int) -> None:
    replies = await asyncio.gather(*(client.echo(f"n{n}") for n in range(size)))
    assert replies == [f"n{n}".encode() for n in range(size)]


@pytest.mark.parametrize("opened_at_start", [OPENED, 0])
async def test_a_burst_within_the_connections_opened_at_start_opens_none(
    stack_settings: Settings, opened_at_start: int
) -> None:
    observer = aioredis.from_url(stack_settings.redis.url, single_connection_client=True)
    client = open_client(stack_settings.redis.url)
    assert isinstance(client, aioredis.Redis)
    try:
        before = await _connected(observer)
        await open_pool(client, opened_at_start)
        assert await _connected(observer) - before == opened_at_start
        started = await _connected(observer)
        await _burst(client, OPENED)
        opened_by_burst = await _connected(observer) - started
        if opened_at_start:
            assert opened_by_burst == 0
        else:  # opened as the burst needed them
            assert 0 < opened_by_burst <= OPENED
        await _burst(client, 4 * OPENED)  # past them: the pool is not bounded
        assert await _connected(observer) - before > OPENED
    finally:
        await client.aclose()
        await observer.aclose()


@pytest.mark.parametrize("serving", [True, False])
async def test_only_a_serving_process_opens_its_connections_at_start(
    settings: Settings, serving: bool
) -> None:
    """A one-shot command (repair, the CLI's reads) sends a few commands on one connection:
    opening the serving processes' burst of connections is start-up work it does not need."""
    warm = settings.model_copy(update={"redis_connections": OPENED})
    assert warm.redis.connections == OPENED
    observer = aioredis.from_url(warm.redis.url, single_connection_client=True)
    try:
        before = await _connected(observer)
        async with connect(warm, producer=False, warm_connections=serving):
            opened = await _connected(observer) - before
        if serving:
            assert opened >= OPENED
        else:
            assert opened < OPENED // 2
    finally:
        await observer.aclose()
