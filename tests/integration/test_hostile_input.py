"""The hostile-input suite on a real broker and a running worker.

Generated records (tests/unit/edges/faust/hostile_records.py: almost-valid events, odd user
ids, surrogates, deep nesting, extreme timestamps, random bytes, originals near the broker's
1 MiB limit) are published interleaved with a steady conversation. Every record must end as
an L1 (or a message waiting for its reply), a duplicate, or exactly one dead letter naming
its position; the steady conversation must be stored whole; the worker must stay live.
The figure printed is hostile records absorbed per minute beside the steady turns' rate.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from tests.unit.edges.faust.hostile_records import records

from memstream.bootstrap import Container, connect
from memstream.contracts.codec import decode_input
from memstream.contracts.records import Consumed, RawEvent
from memstream.domain.models import Level, Turn
from memstream.edges.faust.decoding import Rejected, record_decoder, too_far_ahead
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.runner import WRITE_PATH, RunningProcess, run_parts
from memstream.recall.opening import EnvelopeOpener
from memstream.settings import Settings

pytestmark = [
    pytest.mark.integration,
    pytest.mark.hostile,
    # Faust seeds its own randomness while hypothesis draws, and the figure's records are
    # too large for a useful repr: both harmless here.
    pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning"),
]

STEADY_EXCHANGES = 10


@pytest.fixture
async def runtime(settings: Settings, tmp_path: Path) -> AsyncIterator[Container]:
    local = settings.model_copy(update={"data_dir": tmp_path, "record_retry_budget_s": 1.0})
    async with connect(local, prioritise_online=True) as rt:
        yield rt


@pytest.fixture
async def pipeline(runtime: Container) -> AsyncIterator[RunningProcess]:
    async with run_parts(runtime, WRITE_PATH, fast_rebalance=True) as running:
        yield running


def steady(run: int) -> list[bytes]:
    """A plain conversation of one user, one exchange a minute."""
    start = datetime(2026, 1, 5, 9, tzinfo=UTC) + timedelta(days=run)
    values = []
    for i in range(2 * STEADY_EXCHANGES):
        values.append(
            {
                "type": "turn.v1",
                "event_id": f"steady-{run}-{i}",
                "user_id": "steady",
                "session_id": f"steady-{run}",
                "seq": i,
                "speaker": "Ana" if i % 2 == 0 else "Bot",
                "role": "user" if i % 2 == 0 else "assistant",
                "text": f"Steady message {i} about the garden.",
                "ts": (start + timedelta(minutes=i)).isoformat(),
            }
        )
    return [json.dumps(v).encode() for v in values]


async def dead_letters(runtime: Container, until: set[str]) -> list[dict[str, object]]:
    """The letters on the dead-letter topic, read until every id in `until` has been seen
    and then a little longer (so a second letter about one record would be seen too)."""
    consumer = AIOKafkaConsumer(
        runtime.catalog.dlq.name,
        bootstrap_servers=runtime.settings.broker.bootstrap,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        found: list[dict[str, object]] = []
        deadline = time.monotonic() + 30
        quiet_polls = 0
        while time.monotonic() < deadline and quiet_polls < 3:
            batches = await consumer.getmany(timeout_ms=300)
            read = [json.loads(r.value) for rs in batches.values() for r in rs]
            # Letters naming a user come sealed under its key: opened as the API opens them.
            found += [o.value or {} for o in await EnvelopeOpener(runtime.tree).open(read)]
            seen = {str(letter.get("letter_id")) for letter in found}
            quiet_polls = quiet_polls + 1 if until <= seen and not batches else 0
        return found
    finally:
        await consumer.stop()


def key_of(value: bytes) -> bytes:
    try:
        user = json.loads(value).get("user_id")
    except Exception:
        return b"unknown"
    return str(user).encode("utf-8", "replace") if isinstance(user, str) else b"unknown"


RUNS = iter(range(1000))
ABSORBED: list[tuple[int, float]] = []


@settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(hostile=st.lists(records(), min_size=40, max_size=60))
async def test_hostile_records_are_absorbed_while_a_conversation_goes_on(
    runtime: Container, pipeline: RunningProcess, hostile: list[bytes]
) -> None:
    run = next(RUNS)
    topic = runtime.catalog.turns.name
    producer = runtime.publisher.inner.producer  # type: ignore[attr-defined]  # raw bytes
    conversation = steady(run)
    mixed: list[bytes] = []
    for i, value in enumerate(hostile):
        mixed.append(value)
        if i % 3 == 0 and conversation:
            mixed.append(conversation.pop(0))
    mixed += conversation

    started = time.monotonic()
    placed: list[RawEvent] = []
    for value in mixed:
        meta = await producer.send_and_wait(topic, key=key_of(value), value=value)
        placed.append(RawEvent(value, topic, meta.partition, meta.offset))
    await wait_caught_up(runtime, [], timeout_s=60)
    elapsed = time.monotonic() - started

    decode = record_decoder(runtime.catalog.turns, decode_input, too_far_ahead(timedelta(days=1)))
    decoded = [decode(raw) for raw in placed]
    refused = {
        f"{d.raw.topic}/{d.raw.partition}/{d.raw.offset}"
        for d in decoded
        if isinstance(d, Rejected)
    }
    positions = {f"{r.topic}/{r.partition}/{r.offset}" for r in placed}
    letters = [
        letter
        for letter in await dead_letters(runtime, until=refused)
        if str(letter["letter_id"]) in positions
    ]
    per_record = Counter(str(letter["letter_id"]) for letter in letters)
    assert set(per_record) == refused
    assert all(n == 1 for n in per_record.values()), per_record

    turns = [d for d in decoded if isinstance(d, Consumed) and isinstance(d.event, Turn)]
    for user in {t.event.user_id for t in turns}:
        stored = {
            source
            for node in await runtime.tree.get_many(
                user, await runtime.tree.level_ids(user, Level.SEGMENT)
            )
            for source in node.source_ids
        }
        state = await runtime.tree.load_state(user) or {}
        waiting = {str(t["event_id"]) for t in state.get("pending", [])}
        for turn in (t.event for t in turns if t.event.user_id == user):
            assert turn.event_id in stored | waiting, (user, turn.event_id)
    steady_l1 = await runtime.tree.level_ids("steady", Level.SEGMENT)
    assert len(steady_l1) >= STEADY_EXCHANGES * (run + 1)
    assert pipeline.live()
    ABSORBED.append((len(hostile), elapsed))
    total, seconds = sum(n for n, _ in ABSORBED), sum(s for _, s in ABSORBED)
    print(
        f"\nhostile records absorbed: {total} in {seconds:.1f} s = {60 * total / seconds:.0f}/min, "
        f"with {2 * STEADY_EXCHANGES} steady turns per run all stored"
    )


FIGURE_RECORDS = 100  # hostile records, and valid turns in each phase


async def _stored_in(runtime: Container, values: list[bytes], user: str, l1s: int) -> float:
    """Publish `values` at once; seconds until `user` has `l1s` L1 memories."""
    producer = runtime.publisher.inner.producer  # type: ignore[attr-defined]  # raw bytes
    topic = runtime.catalog.turns.name
    started = time.monotonic()
    sent = [await producer.send(topic, key=key_of(v), value=v) for v in values]
    for future in sent:
        await future
    while len(await runtime.tree.level_ids(user, Level.SEGMENT)) < l1s:
        if time.monotonic() - started > 300:
            have = len(await runtime.tree.level_ids(user, Level.SEGMENT))
            raise TimeoutError(f"{user} has {have} of its {l1s} L1s after 300 s")
        await asyncio.sleep(0.05)
    return time.monotonic() - started


def conversation(user: str, turns: int) -> list[bytes]:
    start = datetime(2026, 2, 2, 9, tzinfo=UTC)
    return [
        json.dumps(
            {
                "type": "turn.v1",
                "event_id": f"{user}-{i}",
                "user_id": user,
                "session_id": f"{user}-s",
                "seq": i,
                "speaker": "Ana" if i % 2 == 0 else "Bot",
                "role": "user" if i % 2 == 0 else "assistant",
                "text": f"Message {i} about the allotment and the tomatoes.",
                "ts": (start + timedelta(seconds=10 * i)).isoformat(),
            }
        ).encode()
        for i in range(turns)
    ]


@settings(
    max_examples=1,
    deadline=None,
    derandomize=True,
    phases=[Phase.generate],  # a figure, not a search: no shrinking
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(hostile=st.lists(records(oversize=False), min_size=FIGURE_RECORDS, max_size=FIGURE_RECORDS))
async def test_figure_hostile_records_per_minute_beside_the_valid_rate(
    runtime: Container, pipeline: RunningProcess, hostile: list[bytes]
) -> None:
    """Same run, same worker, once warm: valid turns alone, then as many again with as many
    hostile records interleaved. Prints both rates; only their ratio means anything on a shared
    machine."""
    await _stored_in(runtime, conversation("warm-up", 20), "warm-up", 10)  # model loaded
    alone = await _stored_in(
        runtime, conversation("alone", FIGURE_RECORDS), "alone", FIGURE_RECORDS // 2
    )
    mixed_values = [
        v for pair in zip(conversation("mixed", FIGURE_RECORDS), hostile, strict=True) for v in pair
    ]
    mixed = await _stored_in(runtime, mixed_values, "mixed", FIGURE_RECORDS // 2)
    await wait_caught_up(runtime, [], timeout_s=60)
    assert pipeline.live()
    print(
        f"\nvalid turns alone: {60 * FIGURE_RECORDS / alone:.0f}/min; "
        f"with {FIGURE_RECORDS} hostile records interleaved: {60 * FIGURE_RECORDS / mixed:.0f} "
        f"valid turns/min and {60 * FIGURE_RECORDS / mixed:.0f} hostile records/min absorbed "
        f"(ratio of valid rates {alone / mixed:.2f})"
    )
