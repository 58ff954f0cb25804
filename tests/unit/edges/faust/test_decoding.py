"""Records decoded once at the edge: valid ones reach the handler, the rest the dead letters."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from memstream.client.events import turn_event
from memstream.contracts.catalog import load_catalog
from memstream.contracts.codec import decode_input, decode_window
from memstream.contracts.records import Consumed, RawEvent, encode_value
from memstream.domain.models import InputEvent, Level, Turn, WindowClosed
from memstream.edges.faust.app import consume_batch, rejection_counter
from memstream.edges.faust.decoding import Rejected, in_tenants_topics, record_decoder
from memstream.metrics import Metrics

CATALOG = load_catalog()
NO_WAIT = (0.0, 0.0)
TURN = {
    "type": "turn.v1",
    "event_id": "e1",
    "user_id": "ana",
    "session_id": "s1",
    "seq": 0,
    "speaker": "Ana",
    "role": "user",
    "text": "I adopted a cat called Miso.",
    "ts": "2024-05-01T09:30:00+02:00",
}
decode_turn = record_decoder(CATALOG.turns, decode_input)


def raw(value: bytes | dict[str, Any], offset: int = 0) -> RawEvent:
    body = value if isinstance(value, bytes) else json.dumps(value).encode()
    return RawEvent(body, "turns", 0, offset, 1714548600.0)


def test_a_valid_turn_becomes_a_turn_with_its_record() -> None:
    record = raw(TURN)
    decoded = decode_turn(record)
    assert isinstance(decoded, Consumed)
    assert decoded.raw is record
    assert isinstance(decoded.event, Turn)
    assert (decoded.event.event_id, decoded.event.ts) == ("e1", datetime.fromisoformat(TURN["ts"]))


@pytest.mark.parametrize(
    ("value", "field", "says"),
    [
        (b"{not json", None, "not JSON"),
        (b"\xff\xfe", None, "UTF-8"),
        (b'{"type": "turn.v1", "seq": NaN}', None, "NaN"),
        (b"[1, 2]", None, "JSON object"),
        ({k: v for k, v in TURN.items() if k != "speaker"}, "speaker", "missing field"),
        (TURN | {"ts": "yesterday at noon"}, "ts", "bad timestamp"),
        (TURN | {"type": "turn.v9"}, "type", "unknown type"),
    ],
)
def test_an_invalid_record_is_rejected_with_the_field_at_fault(
    value: bytes | dict[str, Any], field: str | None, says: str
) -> None:
    decoded = decode_turn(raw(value))
    assert isinstance(decoded, Rejected)
    assert decoded.field_path == field
    assert says in decoded.reason


def test_a_valid_value_the_decoder_refuses_is_rejected_as_undecodable() -> None:
    def refuse(value: dict[str, Any]) -> InputEvent:
        raise ValueError("no such session")

    decoded = record_decoder(CATALOG.turns, refuse)(raw(TURN))
    assert isinstance(decoded, Rejected)
    assert decoded.reason == "undecodable event: no such session"


def test_a_window_record_becomes_a_closure() -> None:
    value = {
        "type": "window.v1",
        "user_id": "ana",
        "level": 3,
        "window_start": "2024-05-01T00:00:00+00:00",
        "window_end": "2024-05-02T00:00:00+00:00",
        "reason": "watermark",
        "node_id": "day-1",
        "parent_id": "week-1",
    }
    decoded = record_decoder(CATALOG.windows, decode_window)(raw(value))
    assert isinstance(decoded, Consumed) and isinstance(decoded.event, WindowClosed)
    assert (decoded.event.window.level, decoded.event.node_id) == (Level.DAY, "day-1")
    refused = record_decoder(CATALOG.windows, decode_window)(raw(value | {"level": 1}))
    assert isinstance(refused, Rejected) and refused.field_path == "level"


async def test_the_handler_gets_the_valid_records_and_the_dead_letters_the_rest() -> None:
    handled: list[list[Consumed[InputEvent]]] = []
    letters: list[tuple[bytes, str, str | None]] = []
    metrics = Metrics(CollectorRegistry())

    async def handler(batch: list[Consumed[InputEvent]]) -> None:
        handled.append(batch)

    async def dead_letter(record: RawEvent, reason: str, field_path: str | None = None) -> None:
        letters.append((record.value, reason, field_path))

    bad = [b"{not json", json.dumps(TURN | {"ts": "noon"}).encode()]
    records = [raw(TURN, 0), raw(bad[0], 1), raw(TURN | {"event_id": "e2"}, 2), raw(bad[1], 3)]
    counter = rejection_counter(metrics, ingested=True)
    await consume_batch(records, decode_turn, handler, dead_letter, counter, backoff_s=NO_WAIT)

    [batch] = handled
    assert [(c.raw.offset, c.event.event_id) for c in batch] == [(0, "e1"), (2, "e2")]  # type: ignore[union-attr]
    assert [(value, field) for value, _, field in letters] == [(bad[0], None), (bad[1], "ts")]
    sample = metrics.registry.get_sample_value
    assert sample("memstream_ingested_events_total", {"outcome": "dead_letter"}) == 2
    assert sample("memstream_dlq_events_total", {"reason": "invalid_value"}) == 1
    assert sample("memstream_dlq_events_total", {"reason": "invalid_ts"}) == 1


async def test_dead_letters_wait_out_a_broker_outage_and_an_all_bad_batch_skips_the_handler() -> (
    None
):
    attempts: list[bytes] = []

    async def handler(batch: list[Consumed[InputEvent]]) -> None:
        raise AssertionError("nothing valid to handle")

    async def dead_letter(record: RawEvent, reason: str, field_path: str | None = None) -> None:
        attempts.append(record.value)
        if len(attempts) < 3:
            raise ConnectionError("broker restarting")

    await consume_batch(
        [raw(b"nope")], decode_turn, handler, dead_letter, lambda _: None, backoff_s=NO_WAIT
    )
    assert attempts == [b"nope"] * 3


async def test_a_dead_letter_from_a_failing_handler_is_counted_too() -> None:
    metrics = Metrics(CollectorRegistry())
    letters: list[str] = []

    async def handler(batch: list[Consumed[InputEvent]]) -> None:
        raise RuntimeError("bug")

    async def dead_letter(record: RawEvent, reason: str, field_path: str | None = None) -> None:
        letters.append(reason)

    counter = rejection_counter(metrics, ingested=True)
    await consume_batch([raw(TURN)], decode_turn, handler, dead_letter, counter, backoff_s=NO_WAIT)
    assert letters == ["handler failed: RuntimeError: bug"]
    sample = metrics.registry.get_sample_value
    assert sample("memstream_dlq_events_total", {"reason": "handler_failed"}) == 1
    assert sample("memstream_ingested_events_total", {"outcome": "dead_letter"}) == 1


@pytest.mark.parametrize(
    ("value", "field", "says"),
    [
        (TURN | {"user_id": "ana\ud800"}, "user_id", "lone surrogate"),
        (TURN | {"text": "bad \udfff text"}, "text", "lone surrogate"),
        (b"[" * 100_000 + b"]" * 100_000, None, "nested deeper"),
        (TURN | {"metadata": json.loads("[" * 40 + "]" * 40)}, "metadata", "nested deeper"),
        (TURN | {"ts": "0001-01-01T00:00:00+01:00"}, "ts", "bad timestamp"),
        (TURN | {"ts": "9999-12-31T23:59:59-01:00"}, "ts", "bad timestamp"),
    ],
)
def test_records_nothing_downstream_could_carry_are_rejected(
    value: bytes | dict[str, Any], field: str | None, says: str
) -> None:
    body = value if isinstance(value, bytes) else json.dumps(value).encode()  # \\uXXXX escapes
    decoded = decode_turn(raw(body))
    assert isinstance(decoded, Rejected)
    assert re.split(r"[.[]", decoded.field_path or "")[0] == (field or "")
    assert says in decoded.reason


def test_an_event_dated_beyond_the_skew_is_rejected_and_one_within_it_admitted() -> None:
    from datetime import UTC, timedelta

    from memstream.edges.faust.decoding import too_far_ahead

    now = datetime(2024, 5, 1, 12, tzinfo=UTC)
    admit = too_far_ahead(timedelta(days=1), clock=lambda: now)
    decode = record_decoder(CATALOG.turns, decode_input, admit)
    soon = (now + timedelta(hours=23)).isoformat()
    later = (now + timedelta(days=2)).isoformat()
    assert isinstance(decode(raw(TURN | {"ts": soon})), Consumed)
    refused = decode(raw(TURN | {"ts": later}))
    assert isinstance(refused, Rejected) and refused.field_path == "ts"
    assert "ahead of the clock" in refused.reason
    tick = decode(raw({"type": "tick.v1", "user_id": "ana", "now": later}))
    assert isinstance(tick, Rejected) and tick.field_path == "now"


def test_a_tenants_turns_topic_takes_only_that_tenants_users() -> None:
    turns = load_catalog().turns
    decode = in_tenants_topics(
        record_decoder(turns, decode_input), {"memstream.turns.v1.acme": "acme"}
    )

    def record(topic: str, user: str) -> RawEvent:
        value = encode_value(turn_event(user_id=user, session_id="s", seq=0, text="hi"))
        return RawEvent(value, topic, 0, 0, None)

    assert isinstance(decode(record("memstream.turns.v1.acme", "acme:ann")), Consumed)
    for user in ("globex:bo", "ann", "acmeann"):
        refused = decode(record("memstream.turns.v1.acme", user))
        assert isinstance(refused, Rejected) and refused.field_path == "user_id", user
    # The shared topic is not checked (an upgrade drains it of tenants' users).
    assert isinstance(decode(record("memstream.turns.v1", "globex:bo")), Consumed)
