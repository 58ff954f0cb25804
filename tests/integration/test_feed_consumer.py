"""`MemoryFeed` on the real broker: typed events, positions, commits, and a position the
broker does not have refused (the embedded broker cannot delete records, so a group behind
retention is tested with a fake consumer: `tests/unit/client/test_feed.py`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from memstream.client.feed import MemoryFeed
from memstream.client.feed_events import FeedEvent, MemoryRemoved, MemoryWritten, UserForgotten
from memstream.contracts.catalog import Catalog
from memstream.contracts.codec import memory_event, removed_event
from memstream.contracts.feed_events import user_forgotten_event
from memstream.contracts.records import encode_value
from memstream.domain.models import Level, MemoryNode
from memstream.settings import Settings

AT = datetime(2024, 5, 1, 9, 30, tzinfo=UTC)
USER = "feed-ann"


def memory(n: int, version: int = 1, user: str = USER) -> dict[str, Any]:
    node = MemoryNode(f"{user}-m{n}", user, Level.SEGMENT, AT, AT, f"memory {n}", version=version)
    return memory_event(node)


async def publish(settings: Settings, catalog: Catalog, values: Sequence[dict[str, Any]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=settings.broker.bootstrap, acks="all")
    await producer.start()
    try:
        for value in values:
            key = str(value["user_id"]).encode()
            await producer.send_and_wait(catalog.memories.name, encode_value(value), key=key)
    finally:
        await producer.stop()


async def take(feed: AsyncIterator[FeedEvent], n: int) -> list[FeedEvent]:
    return [await asyncio.wait_for(anext(feed), 30) for _ in range(n)]


def feed(settings: Settings, catalog: Catalog, group: str = "feed", **options: Any) -> MemoryFeed:
    return MemoryFeed(
        settings.broker.bootstrap,
        group_id=f"{settings.broker.consumer_group}-{group}",
        catalog=catalog,
        **options,
    )


async def test_events_come_typed_in_order_and_a_group_goes_on_where_it_stopped(
    settings: Settings, catalog: Catalog
) -> None:
    gone = removed_event(USER, [f"{USER}-m0"])
    await publish(settings, catalog, [memory(0), memory(1), memory(0, 2), gone])
    async with feed(settings, catalog) as first:
        events = await take(first, 4)
    assert [type(e) for e in events] == [MemoryWritten] * 3 + [MemoryRemoved]
    assert [e.dedup_key for e in events[:3]] == [
        f"memory:{USER}-m0:v1",
        f"memory:{USER}-m1:v1",
        f"memory:{USER}-m0:v2",
    ]
    assert [e.offset for e in events] == [0, 1, 2, 3]  # one user: one partition, in order
    partition = events[0].partition

    # Leaving the block committed what the loop was given: the group reads only what is new.
    await publish(settings, catalog, [user_forgotten_event(USER, 0, 9, AT.timestamp())])
    async with feed(settings, catalog) as again:
        [forgotten] = await take(again, 1)
        assert isinstance(forgotten, UserForgotten) and forgotten.offset == 4
        assert again.positions() == {}  # in hand until the loop comes back or leaves
    assert again.positions() == {partition: 5}

    # Another group from a position of its choosing.
    async with feed(settings, catalog, "from-2", positions={partition: 2}) as placed:
        assert [e.offset for e in await take(placed, 3)] == [2, 3, 4]


async def test_a_position_past_the_end_is_refused_with_where_the_feed_ends(
    settings: Settings, catalog: Catalog
) -> None:
    await publish(settings, catalog, [memory(0)])
    async with feed(settings, catalog) as reader:
        [first] = await take(reader, 1)
    async with feed(settings, catalog, "future", positions={first.partition: 50}) as future:
        with pytest.raises(ValueError, match="past the end"):
            await take(future, 1)
