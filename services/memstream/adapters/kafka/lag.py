"""Consumer lag: how far a consumer group's committed offsets trail the ends of its topics."""

from __future__ import annotations

from collections.abc import Sequence

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient


async def consumer_lag(
    bootstrap: str, group: str, topics: Sequence[str]
) -> dict[tuple[str, int], int]:
    """Lag per (topic, partition); a partition the group never committed counts from 0."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await admin.start()
    await consumer.start()
    try:
        await consumer.topics()  # fetches metadata, so partitions_for_topic knows them all
        partitions = [
            TopicPartition(topic, p)
            for topic in topics
            for p in sorted(consumer.partitions_for_topic(topic) or ())
        ]
        ends = await consumer.end_offsets(partitions)
        committed = await admin.list_consumer_group_offsets(group, partitions=partitions)
        lag: dict[tuple[str, int], int] = {}
        for tp in partitions:
            meta = committed.get(tp)
            done = meta.offset if meta is not None and meta.offset >= 0 else 0
            lag[(tp.topic, tp.partition)] = max(0, ends[tp] - done)
        return lag
    finally:
        await consumer.stop()
        await admin.close()
