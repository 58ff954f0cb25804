"""Topics on a real Kafka-protocol broker: creation, and events from two different clients."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import uuid
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from typer.testing import CliRunner

from memstream.adapters.kafka.admin import admin_client, ensure_topics
from memstream.contracts.catalog import Catalog, load_catalog
from memstream.entrypoints.cli import app
from memstream.settings import Settings

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
    first = await ensure_topics(stack_settings.broker.bootstrap, catalog.topics)
    second = await ensure_topics(stack_settings.broker.bootstrap, catalog.topics)

    assert [s.state for s in first] == ["created"] * len(catalog.topics)
    assert [s.state for s in second] == ["exists"] * len(catalog.topics)
    assert [s.partitions for s in second] == [spec.partitions for spec in catalog]
    async with admin_client(stack_settings.broker.bootstrap) as admin:
        resource = ConfigResource(ConfigResourceType.TOPIC, catalog.turns.name)
        [response] = await admin.describe_configs([resource])
    configs = {entry[0]: entry[1] for entry in response.resources[0][4]}
    assert configs["retention.ms"] == str(catalog.turns.retention_ms)
    assert configs["cleanup.policy"] == catalog.turns.cleanup_policy


def test_cli_create_reports_created_then_existing(stack_settings: Settings) -> None:
    env = {
        "MEMSTREAM_KAFKA_BOOTSTRAP": stack_settings.broker.bootstrap,
        "MEMSTREAM_TOPIC_PREFIX": f"cli-{uuid.uuid4().hex[:8]}.",
        "COLUMNS": "200",  # rich wraps tables to 80 columns when not on a terminal
    }
    runner = CliRunner()
    first = runner.invoke(app, ["topics", "create"], env=env)
    second = runner.invoke(app, ["topics", "create"], env=env)

    assert first.exit_code == 0, first.output
    topics = len(load_catalog().topics)
    assert first.output.count("created") == topics
    assert second.exit_code == 0, second.output
    assert second.output.count("exists") == topics and "created" not in second.output


@pytest.fixture(scope="module")
def kcat(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    """kcat and the environment to run it in.

    librdkafka 2.0.2 (Debian bookworm's kcat) skips `length - 1` bytes of each tagged field,
    and Tansu sends all four ApiVersions v3 tagged fields, so that kcat fails with "Read
    underflow" before its first request. When the confluent-kafka wheel is installed, its
    newer bundled librdkafka is put first on the library path instead (it is a dev
    dependency, so a missing one fails the test rather than skipping it).
    """
    binary = shutil.which("kcat")
    if binary is None:
        pytest.fail("kcat is not installed (apt-get install kcat; scripts/setup.sh does it)")
    env = dict(os.environ)
    bundled = _bundled_librdkafka()
    if bundled is not None:
        shim = tmp_path_factory.mktemp("librdkafka")
        (shim / "librdkafka.so.1").symlink_to(bundled)
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            filter(None, [str(shim), env.get("LD_LIBRARY_PATH")])
        )
    return binary, env


def _bundled_librdkafka() -> Path | None:
    spec = importlib.util.find_spec("confluent_kafka")
    if spec is None or spec.origin is None:
        return None
    libs = Path(spec.origin).parent.parent / "confluent_kafka.libs"
    return next(iter(sorted(libs.glob("librdkafka*.so*"))), None)


async def test_events_from_aiokafka_and_kcat_round_trip(
    settings: Settings, catalog: Catalog, kcat: tuple[str, dict[str, str]]
) -> None:
    topic, bootstrap, user = catalog.turns.name, settings.broker.bootstrap, "user-42"
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        sent = await producer.send_and_wait(
            topic, json.dumps(_turn("e-aiokafka", user)).encode(), key=user.encode()
        )
    finally:
        await producer.stop()
    lines = [json.dumps(_turn("e-kcat", user)), json.dumps(_turn("e-bad", user, ts="yesterday"))]
    await _kcat_produce(kcat, bootstrap, topic, user, lines)

    records = await _consume(bootstrap, topic, count=3)

    assert [json.loads(r.value)["event_id"] for r in records] == ["e-aiokafka", "e-kcat", "e-bad"]
    # One user, one partition, whichever client produced: what per-user ordering rests on.
    assert {r.partition for r in records} == {sent.partition}
    assert all(r.key == user.encode() for r in records)
    problems = [catalog.validate(topic, r.value) for r in records]
    assert problems[:2] == [[], []]
    assert [p.field for p in problems[2]] == ["ts"]
    assert "bad timestamp" in problems[2][0].reason


async def _kcat_produce(
    kcat: tuple[str, dict[str, str]], bootstrap: str, topic: str, key: str, lines: list[str]
) -> None:
    binary, env = kcat
    # The settings docs/producers.md gives producers, as written there. librdkafka's default
    # partitioner hashes keys with CRC32, Java and aiokafka (and so Faust) with murmur2:
    # without the one it sets, one user's events from two producers would land in two
    # partitions and lose their order.
    settings = _documented_producer_settings()
    assert "topic.partitioner=murmur2_random" in settings
    config = Path(env.get("TMPDIR", "/tmp")) / f"memstream-producer-{uuid.uuid4().hex}.properties"
    config.write_text("\n".join(settings) + "\n")
    proc = await asyncio.create_subprocess_exec(
        *(binary, "-P", "-b", bootstrap, "-t", topic, "-k", key, "-F", str(config)),
        stdin=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    _, err = await asyncio.wait_for(proc.communicate("\n".join(lines).encode() + b"\n"), 30)
    config.unlink()
    if proc.returncode != 0 and b"Read underflow" in err and "LD_LIBRARY_PATH" not in env:
        pytest.fail(
            "this kcat's librdkafka cannot parse Tansu's ApiVersions; pip install confluent-kafka"
        )
    assert proc.returncode == 0, err.decode()


def _documented_producer_settings() -> list[str]:
    """The `properties` block of docs/producers.md, one `name=value` per line."""
    page = (Path(__file__).parents[2] / "docs" / "producers.md").read_text()
    block = page.split("```properties", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip() and "#" not in line]


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
