"""Where turns are in the turns log: read on a benchmark's timeout, to tell a turn the
broker never kept from one the stack kept but never wrote."""

from __future__ import annotations

import json
from collections.abc import Collection

from aiokafka import AIOKafkaConsumer, TopicPartition

FETCH_WAIT_MS = 500


async def places_of(
    bootstrap: str, topic: str, wanted: Collection[tuple[str, str]]
) -> dict[tuple[str, str], tuple[int, int]]:
    """(partition, offset) of each (user, event id) of `wanted` found in `topic`, read from
    its start to its end as they are now."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
    )
    await consumer.start()
    found: dict[tuple[str, str], tuple[int, int]] = {}
    try:
        await consumer.topics()  # the metadata partitions_for_topic reads
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        if not partitions:
            return found
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)
        left = {tp for tp in partitions if ends[tp] > 0}
        while left:
            fetched = await consumer.getmany(*left, timeout_ms=FETCH_WAIT_MS)
            for tp, records in fetched.items():
                for record in records:
                    key = _user_and_event(record.value)
                    if key is not None and key in wanted:
                        found[key] = (tp.partition, record.offset)
                if records and records[-1].offset + 1 >= ends[tp]:
                    left.discard(tp)
    finally:
        await consumer.stop()
    return found


def _user_and_event(value: bytes | None) -> tuple[str, str] | None:
    try:
        doc = json.loads(value or b"")
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    return str(doc.get("user_id")), str(doc.get("event_id"))
