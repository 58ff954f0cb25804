"""The write path end to end: LoCoMo through the real broker, Faust workers, Redis and Qdrant."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer
from tests.unit.tree_audit import check_containment

from memstream.adapters.kafka.producer import KafkaPublisher
from memstream.bootstrap import Container, connect
from memstream.domain.calendar import parent_window_start
from memstream.domain.models import Level, MemoryNode
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.runner import WRITE_PATH, RunningProcess, run_parts
from memstream.recall.opening import EnvelopeOpener
from memstream.settings import Settings
from memstream_lab.locomo import conversation_events, load_conversation, locomo_data_dir

CONVERSATION = "30"  # the shortest of the five
USER = f"locomo-{CONVERSATION}"


@pytest.fixture
async def runtime(settings: Settings, tmp_path: Path) -> AsyncIterator[Container]:
    local = settings.model_copy(
        update={"data_dir": tmp_path, "clock_grace_s": 0.0, "clock_interval_s": 0.5}
    )
    async with connect(local, prioritise_online=True) as rt:
        yield rt


@pytest.fixture
async def pipeline(runtime: Container) -> AsyncIterator[RunningProcess]:
    async with run_parts(runtime, WRITE_PATH, fast_rebalance=True) as running:
        yield running


def locomo_file() -> Path:
    return locomo_data_dir() / f"{CONVERSATION}.json"


async def ingest_and_wait(runtime: Container, path: Path, users: list[str]) -> None:
    await publish_file(
        path,
        catalog=runtime.catalog,
        bootstrap=runtime.settings.broker.bootstrap,
        show_progress=False,
    )
    await wait_caught_up(runtime, users, timeout_s=120)


async def all_nodes(runtime: Container, user: str) -> list[MemoryNode]:
    nodes: list[MemoryNode] = []
    for level in Level:
        ids = await runtime.tree.level_ids(user, level, limit=100_000)
        nodes += await runtime.tree.get_many(user, ids)
    return nodes


def expected_counts() -> dict[Level, int]:
    conv = load_conversation(locomo_file())
    days = {parent_window_start(Level.SESSION, s.start, "UTC") for s in conv.sessions}
    weeks = {parent_window_start(Level.DAY, d, "UTC") for d in days}
    months = {parent_window_start(Level.WEEK, w, "UTC") for w in weeks}
    return {
        # LoCoMo is a conversation between two people: every message is its own exchange.
        Level.SEGMENT: sum(len(s.messages) for s in conv.sessions),
        Level.SESSION: len(conv.sessions),
        Level.DAY: len(days),
        Level.WEEK: len(weeks),
        Level.MONTH: len(months),
    }


async def test_locomo_conversation_builds_a_sound_tree(
    runtime: Container, pipeline: RunningProcess
) -> None:
    await ingest_and_wait(runtime, locomo_file(), [USER])
    nodes = await all_nodes(runtime, USER)
    counts = {level: sum(1 for n in nodes if n.level == level) for level in Level}
    assert counts == expected_counts()
    assert check_containment(nodes) == []
    # Qdrant holds exactly the nodes Redis links, for this user only.
    assert await runtime.index.count(USER) == len(nodes)
    # Every message of the conversation is the source of exactly one L1 memory.
    dia_ids = load_conversation(locomo_file()).dia_ids
    l1_sources = [s for n in nodes if n.level == Level.SEGMENT for s in n.source_ids]
    assert sorted(l1_sources) == sorted(dia_ids)
    # Leaves keep their messages verbatim; every fact of a summary cites real messages.
    for node in nodes:
        if node.level == Level.SEGMENT:
            assert [m.event_id for m in node.messages] == list(node.source_ids)
        else:
            assert node.facts or "Nothing was disclosed" in node.text
            assert all(f.source_ids and set(f.source_ids) <= set(dia_ids) for f in node.facts)
    assert all(n.facts for n in nodes if n.level == Level.MONTH)

    # The same input again changes nothing: same ids, same versions.
    before = {n.id: n.version for n in nodes}
    await ingest_and_wait(runtime, locomo_file(), [USER])
    after = {n.id: n.version for n in await all_nodes(runtime, USER)}
    assert after == before

    # A late turn in the first session re-consolidates exactly the windows that contain it.
    first_session = load_conversation(locomo_file()).sessions[0]
    late = next(
        e for e in conversation_events(load_conversation(locomo_file())) if e["type"] == "turn.v1"
    )
    late = late | {"event_id": "late-1", "seq": 999, "text": "One more thing: I adopted a parrot."}
    late_file = runtime.settings.data_dir / "late.jsonl"
    late_file.write_text(json.dumps(late) + "\n")
    await ingest_and_wait(runtime, late_file, [USER])
    changed = {n.id: n for n in await all_nodes(runtime, USER) if before.get(n.id) != n.version}
    levels_changed = sorted(int(n.level) for n in changed.values())
    assert levels_changed == [1, 2, 3, 4, 5]  # the new L1, and its session, day, week, month
    assert all(n.version == 2 for n in changed.values() if n.level > Level.SEGMENT)
    session_node = next(n for n in changed.values() if n.level == Level.SESSION)
    assert session_node.session_id == first_session.id
    assert "late-1" in session_node.source_ids
    assert check_containment(await all_nodes(runtime, USER)) == []


async def test_invalid_events_go_to_the_dlq_and_the_rest_is_processed(
    runtime: Container, pipeline: RunningProcess
) -> None:
    user = "dlq-user"
    good = [
        {
            "type": "turn.v1",
            "event_id": f"ok-{i}",
            "user_id": user,
            "session_id": "s1",
            "seq": i,
            "speaker": "Ana" if i % 2 == 0 else "Mira",
            "role": "user" if i % 2 == 0 else "assistant",
            "text": f"Message number {i} about sourdough baking.",
            "ts": f"2025-03-0{1 + i // 2}T10:0{i}:00+00:00",
        }
        for i in range(4)
    ]
    bad: list[bytes] = [
        b"{not json",
        json.dumps(
            {k: v for k, v in good[0].items() if k != "speaker"} | {"event_id": "bad-1"}
        ).encode(),
        json.dumps(good[0] | {"event_id": "bad-2", "ts": "yesterday at noon"}).encode(),
        json.dumps(good[0] | {"event_id": "bad-3", "text": "x" * 20_000}).encode(),
    ]
    stream = [json.dumps(good[0]).encode(), bad[0], json.dumps(good[1]).encode(), bad[1], bad[2]]
    stream += [json.dumps(good[2]).encode(), bad[3], json.dumps(good[3]).encode()]
    # Raw bytes, as a producer sends them (the runtime's publisher seals what it sends).
    producer = KafkaPublisher.for_bootstrap(runtime.settings.broker.bootstrap)
    await producer.start()
    try:
        for value in stream:
            await producer.send_raw(runtime.catalog.turns.name, user.encode(), value)
    finally:
        await producer.stop()
    await wait_caught_up(runtime, [], timeout_s=60)

    l1 = await runtime.tree.get_many(user, await runtime.tree.level_ids(user, Level.SEGMENT))
    assert sorted(s for n in l1 for s in n.source_ids) == [f"ok-{i}" for i in range(4)]

    letters = await read_topic(runtime, runtime.catalog.dlq.name, expected=4)
    # The letters naming the user are sealed under its key (docs/forget-everywhere.md): the
    # API's opener gives them back; the one naming nobody keeps no original bytes.
    opened = [o.value or {} for o in await EnvelopeOpener(runtime.tree).open(letters)]
    [nameless] = [letter for letter in opened if not letter["original_b64"]]
    assert nameless["original_sha256"] == hashlib.sha256(bad[0]).hexdigest()
    assert "json" in str(nameless["reason"]).lower()
    by_original = {base64.b64decode(str(v["original_b64"])): v for v in opened if v is not nameless}
    assert set(by_original) == set(bad[1:])  # byte for byte, each once
    assert [by_original[b]["error_field"] for b in bad[1:]] == ["speaker", "ts", "text"]
    assert [letter["type"] for letter in letters].count("sealed_letter.v1") == 3


async def read_topic(runtime: Container, topic: str, expected: int) -> list[dict[str, object]]:
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=runtime.settings.broker.bootstrap, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        found: list[dict[str, object]] = []
        loop = asyncio.get_running_loop()
        end = loop.time() + 30
        while len(found) < expected and loop.time() < end:
            batches = await consumer.getmany(timeout_ms=500)
            for records in batches.values():
                found += [json.loads(r.value) for r in records]
        return found
    finally:
        await consumer.stop()


async def test_steps_smaller_than_a_batch_split_exchanges_and_lose_nothing(
    settings: Settings, tmp_path: Path
) -> None:
    """Steps of 3 records cut most exchanges in two: the question waits in the window state
    for its reply from the next step, and each exchange still makes one L1."""
    user = "steps-user"
    start = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
    events: list[dict[str, object]] = []
    for i in range(10):
        for j, role in enumerate(("user", "assistant")):
            events.append(
                {
                    "type": "turn.v1",
                    "event_id": f"m{i}-{role}",
                    "user_id": user,
                    "session_id": "s1",
                    "seq": 2 * i + j,
                    "speaker": role,
                    "role": role,
                    "text": f"{role} message number {i} about the garden",
                    "ts": (start + timedelta(minutes=2 * i + j)).isoformat(),
                }
            )
    end = {"type": "session_end.v1", "user_id": user, "session_id": "s1", "ts": events[-1]["ts"]}
    events.append(end)
    path = tmp_path / "exchanges.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))

    local = settings.model_copy(
        update={
            "data_dir": tmp_path,
            "consume_step_size": 3,
            "clock_grace_s": 0.0,
            "clock_interval_s": 0.5,
        }
    )
    async with run_parts(local, WRITE_PATH, fast_rebalance=True) as running:
        rt = running.container
        await ingest_and_wait(rt, path, [user])
        nodes = await all_nodes(rt, user)
        assert await rt.index.count(user) == len(nodes)
    leaves = sorted(tuple(n.source_ids) for n in nodes if n.level == Level.SEGMENT)
    assert leaves == sorted((f"m{i}-user", f"m{i}-assistant") for i in range(10))
    assert check_containment(nodes) == []
