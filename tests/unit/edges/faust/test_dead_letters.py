"""Dead letters fit the producer's limit and carry a stable id, whatever the record was."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime

from memstream.contracts.catalog import load_catalog
from memstream.contracts.records import Outbound, RawEvent, encode_value
from memstream.edges.faust.dead_letters import KEPT_BYTES, DeadLetters

CATALOG = load_catalog()
PRODUCER_LIMIT = 1024 * 1024  # aiokafka's default max_request_size


class Published:
    def __init__(self) -> None:
        self.events: list[Outbound] = []

    async def publish(self, events: list[Outbound]) -> None:
        self.events.extend(events)


def letters() -> DeadLetters:
    return DeadLetters(Published(), "dlq", clock=lambda: datetime(2024, 5, 1, tzinfo=UTC))


def test_an_oversize_record_is_cut_and_its_letter_says_where_the_rest_is() -> None:
    original = json.dumps({"user_id": "ana", "text": "x" * 1_000_000}).encode()
    raw = RawEvent(original, "memstream.turns.v1", 3, 42)
    letter = letters().letter(raw, "text: too long")
    wire = encode_value(letter.value)
    assert len(wire) < PRODUCER_LIMIT // 2
    assert letter.value["truncated"] is True
    assert base64.b64decode(letter.value["original_b64"]) == original[:KEPT_BYTES]
    assert letter.value["original_bytes"] == len(original)
    assert letter.value["original_sha256"] == hashlib.sha256(original).hexdigest()
    assert letter.value["letter_id"] == "memstream.turns.v1/3/42"
    assert CATALOG.dlq.validate(wire) == []


def test_a_small_record_travels_whole_and_its_letter_is_valid() -> None:
    raw = RawEvent(b'{"user_id": "ana"}', "memstream.turns.v1", 0, 7)
    letter = letters().letter(raw, "type: missing field", "type")
    assert (letter.key, letter.value["truncated"], letter.value["error_field"]) == (
        "ana",
        False,
        "type",
    )
    assert base64.b64decode(letter.value["original_b64"]) == raw.value
    assert CATALOG.dlq.validate(encode_value(letter.value)) == []


def test_hostile_records_still_give_an_encodable_letter() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    surrogate_user = b'{"user_id": "a\\ud800"}'
    for value in (deep, surrogate_user, b"\xff\xfe", b"", b'{"user_id": 5}'):
        raw = RawEvent(value, "memstream.turns.v1", 0, 1)
        letter = letters().letter(raw, "reason with a lone \ud800 surrogate", "x\udc00" * 300)
        wire = encode_value(letter.value)  # raises on anything UTF-8 cannot carry
        letter.key.encode()
        assert CATALOG.dlq.validate(wire) == []
    assert letters().letter(RawEvent(surrogate_user, "t", 0, 1), "r").key == "a?"
    assert letters().letter(RawEvent(deep, "t", 0, 1), "r").key == "unknown"
