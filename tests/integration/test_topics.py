"""Topics on a real Kafka-protocol broker: creation, and events from two different clients."""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from typer.testing import CliRunner

from memstream.adapters.kafka_admin import admin_client, ensure_topics
from memstream.cli import app
from memstream.settings import Settings
from memstream.topics import Catalog, load_catalog

pytestmark = pytest.mark.integration


def _turn(event_id: str, user_id: str, **changes: object) -> dict[str, object]:
    turn: dict[str, object] = {
        "type": "turn.v1",
        "event_id": event_id,
        "user_id": user_id,
        "session_id": "s1",
        "seq": 0,
        "speaker": "Ann",
        "role": "user",
        "text": "I adopted a cat called Miso.",
        "ts": "2024-05-01T09:30:00+02:00",
    }
    return turn | changes


async def test_create_topics_is_idempotent(stack_settings: Settings) -> None:
    catalog = load_catalog(f"idem-{uuid.uuid4().hex[:8]}.")
    first = await ensure_topics(stack_settings.kafka_bootstrap, catalog.topics)
    second = await ensure_topics(stack_settings.kafka_bootstrap, catalog.topics)

    assert [s.state for s in first] == ["created"] * len(catalog.topics)
    assert [s.state for s in second] == ["exists"] * len(catalog.topics)
    assert [s.partitions for s in second] == [spec.partitions for spec in catalog]
    async with admin_client(stack_settings.kafka_bootstrap) as admin:
        resource = ConfigResource(ConfigResourceType.TOPIC, catalog.turns.name)
        [response] = await admin.describe_configs([resource])
    configs = {entry[0]: entry[1] for entry in response.resources[0][4]}
    assert configs["retention.ms"] == str(catalog.turns.retention_ms)
    assert configs["cleanup.policy"] == catalog.turns.cleanup_policy


def test_cli_create_reports_created_then_existing(stack_settings: Settings) -> None:
    env = {
        "MEMSTREAM_KAFKA_BOOTSTRAP": stack_settings.kafka_bootstrap,
        "MEMSTREAM_TOPIC_PREFIX": f"cli-{uuid.uuid4().hex[:8]}.",
        "COLUMNS": "200",  # rich wraps tables to 80 columns when not on a terminal
    }
    runner = CliRunner()
    first = runner.invoke(app, ["topics", "create"], env=env)
    second = runner.invoke(app, ["topics", "create"], env=env)

    assert first.exit_code == 0, first.output
    assert first.output.count("created") == 4
    assert second.exit_code == 0, second.output
    assert second.output.count("exists") == 4 and "created" not in second.output


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
async def test_events_from_aiokafka_and_kcat_round_trip(
    settings: Settings, catalog: Catalog
) -> None:
    topic, bootstrap, user = catalog.turns.name, settings.kafka_bootstrap, "user-42"
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        sent = await producer.send_and_wait(
            topic, json.dumps(_turn("e-aiokafka", user)).encode(), key=user.encode()
        )
    finally:
        await producer.stop()
    # librdkafka's default partitioner (CRC32) differs from the Java/aiokafka one (murmur2):
    # a producer must pick murmur2 or the same user's events land in different partitions.
    lines = [json.dumps(_turn("e-kcat", user)), json.dumps(_turn("e-bad", user, ts="yesterday"))]
    await _kcat_produce(bootstrap, topic, user, lines)

    records = await _consume(bootstrap, topic, count=3)

    assert [r.value and json.loads(r.value)["event_id"] for r in records] == [
        "e-aiokafka",
        "e-kcat",
        "e-bad",
    ]
    assert {r.partition for r in records} == {sent.partition}
    assert all(r.key == user.encode() for r in records)
    problems = [catalog.validate(topic, r.value) for r in records]
    assert problems[:2] == [[], []]
    assert [p.field for p in problems[2]] == ["ts"]
    assert "bad timestamp" in problems[2][0].reason


async def _kcat_produce(bootstrap: str, topic: str, key: str, lines: list[str]) -> None:
    proc = await asyncio.create_subprocess_exec(
        "kcat",
        "-P",
        "-b",
        bootstrap,
        "-t",
        topic,
        "-k",
        key,
        "-X",
        "topic.partitioner=murmur2_random",
        stdin=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate("\n".join(lines).encode() + b"\n"), 30)
    assert proc.returncode == 0, err.decode()


async def _consume(bootstrap: str, topic: str, *, count: int, timeout_s: float = 20.0) -> list:
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest"
    )
    await consumer.start()
    records: list = []
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while len(records) < count and loop.time() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            for batch in batches.values():
                records.extend(batch)
    finally:
        await consumer.stop()
    return sorted(records, key=lambda r: (r.partition, r.offset))
