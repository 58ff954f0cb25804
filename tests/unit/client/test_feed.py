"""`MemoryFeed` decisions that need no broker: a group behind retention, records it skips."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import OffsetOutOfRangeError
from aiokafka.structs import ConsumerRecord

from memstream.client.feed import FeedBehindRetention, MemoryFeed
from memstream.client.feed_events import MemoryRemoved
from memstream.contracts.catalog import load_catalog
from memstream.contracts.codec import removed_event
from memstream.contracts.records import encode_value

TOPIC = load_catalog().memories.name
TP = TopicPartition(TOPIC, 2)


class ConsumerAfterRetention:
    """The group wants offset 5 of partition 2; retention removed everything before 40."""

    def __init__(self, records: list[ConsumerRecord[Any, Any]] | None = None) -> None:
        self.records = records
        self.committed: list[dict[TopicPartition, int]] = []

    async def getmany(self, **_: object) -> dict[TopicPartition, list[ConsumerRecord[Any, Any]]]:
        if self.records is None:
            raise OffsetOutOfRangeError({TP: 5})
        return {TP: self.records}

    async def beginning_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return dict.fromkeys(tps, 40)

    async def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return dict.fromkeys(tps, 90)

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        self.committed.append(offsets)

    async def start(self) -> None:
        pass

    def assignment(self) -> set[TopicPartition]:
        return {TP}

    def subscribe(self, topics: list[str], listener: object) -> None:
        pass

    async def stop(self) -> None:
        pass


def record(offset: int, value: bytes) -> ConsumerRecord[Any, Any]:
    return ConsumerRecord(TOPIC, 2, offset, 0, 0, b"ann", value, None, 0, len(value), ())


async def test_a_group_behind_retention_is_told_what_was_lost_and_where_to_resume() -> None:
    feed = MemoryFeed("127.0.0.1:1", group_id="g")
    feed.consumer = ConsumerAfterRetention()  # type: ignore[assignment]
    with pytest.raises(FeedBehindRetention) as caught:
        await anext(feed)
    assert caught.value.lost == {2: (5, 40)}
    assert caught.value.resume_from == {2: 40}
    assert "partition 2: wanted offset 5, oldest kept 40" in str(caught.value)
    assert "resume from positions={2: 40}" in str(caught.value)


async def test_unknown_types_are_skipped_and_an_event_counts_once_the_loop_comes_back() -> None:
    newer = encode_value({"type": "fact_superseded.v1", "user_id": "ann"})
    consumer = ConsumerAfterRetention(
        [record(7, newer), record(8, removal("m1")), record(9, removal("m2"))]
    )
    feed = MemoryFeed("127.0.0.1:1", group_id="g")
    feed.consumer = consumer  # type: ignore[assignment]
    event = await anext(feed)
    assert isinstance(event, MemoryRemoved) and (event.partition, event.offset) == (2, 8)
    await feed.commit()
    assert consumer.committed == [{TP: 8}]  # past the skipped record, not the one in hand
    await anext(feed)
    await feed.commit()
    assert consumer.committed[-1] == {TP: 9}
    with pytest.raises(RuntimeError):
        async with feed:  # (already started: entering only starts the fake again)
            raise RuntimeError("handling offset 9 failed")
    assert consumer.committed[-1] == {TP: 9}  # so the next run reads it again
    assert feed.positions() == {2: 9}


def removal(memory_id: str) -> bytes:
    return encode_value(removed_event("ann", [memory_id]))
