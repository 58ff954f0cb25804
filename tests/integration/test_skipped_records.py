"""The turns agent's reader of records its consumer stepped over, on the real broker: the
records between two that came one after the other with a gap are read back at their offsets
and put before the second."""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaProducer

from memstream.contracts.catalog import Catalog
from memstream.contracts.records import RawEvent
from memstream.edges.faust.app import skipped_records
from memstream.settings import Settings

pytestmark = pytest.mark.integration


async def test_records_stepped_over_are_read_back_from_the_broker(
    settings: Settings, catalog: Catalog
) -> None:
    topic = catalog.turns.name
    producer = AIOKafkaProducer(bootstrap_servers=settings.broker.bootstrap, acks="all")
    await producer.start()
    try:
        for n in range(8):
            await producer.send_and_wait(topic, f"r{n}".encode(), key=b"u", partition=2)
    finally:
        await producer.stop()

    def handed(*offsets: int) -> list[RawEvent]:
        return [RawEvent(f"r{o}".encode(), topic, 2, o, None) for o in offsets]

    skipped = skipped_records(settings.broker.bootstrap, topic)
    try:
        assert await skipped.filled(handed(0, 1)) == handed(0, 1)
        filled = await skipped.filled(handed(5, 6))
    finally:
        await skipped.close()
    assert [(raw.offset, raw.value) for raw in filled] == [
        (o, f"r{o}".encode()) for o in range(2, 7)
    ]


def test_only_the_embedded_broker_has_what_its_consumer_stepped_over_read_back(
    settings: Settings,
) -> None:
    """Against a real Kafka broker a gap is a transactional producer's marker, not a skip."""
    assert settings.broker.read_back_skipped  # the tests' embedded stack
    assert not Settings(kafka_bootstrap="kafka:9092").broker.read_back_skipped
