"""Events are refused before they are sent, in the same words as the workers' dead letters."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstream.client import AsyncMemstreamProducer
from memstream.client.events import (
    InvalidEvent,
    checked,
    forget_event,
    session_end_event,
    turn_event,
)
from memstream.contracts.catalog import load_catalog
from memstream.contracts.codec import decode_input, encode_turn
from memstream.contracts.records import RawEvent, encode_value
from memstream.domain.models import Turn
from memstream.edges.faust.decoding import Rejected, record_decoder

CATALOG = load_catalog("p.")


def _turn(**changes: object) -> dict[str, object]:
    fields: dict[str, object] = {
        "user_id": "ann",
        "session_id": "s1",
        "seq": 0,
        "text": "I adopted a cat called Miso.",
        "ts": "2024-05-01T09:30:00+02:00",
    }
    return turn_event(**(fields | changes))  # type: ignore[arg-type]


def test_a_valid_turn_goes_to_the_turns_topic_keyed_by_user() -> None:
    value = _turn()

    assert checked(CATALOG, value) == ("p.memstream.turns.v1", "ann")
    assert value["speaker"] == "user" and len(str(value["event_id"])) == 36


def test_each_turn_gets_its_own_event_id_unless_one_is_given() -> None:
    assert _turn()["event_id"] != _turn()["event_id"]
    assert _turn(event_id="e-1")["event_id"] == "e-1"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"ts": "yesterday"}, "ts"),
        ({"role": "robot"}, "role"),
        ({"user_id": "ann smith"}, "user_id"),
        ({"seq": "first"}, "seq"),
        ({"tz": "Mars/Olympus"}, "tz"),
        ({"expires_at": "2024-06-01T00:00:00"}, "expires_at"),  # no offset
    ],
)
def test_bad_turns_are_refused_with_the_workers_reason(
    changes: dict[str, object], field: str
) -> None:
    value = _turn(**changes)
    decoder = record_decoder(CATALOG.turns, decode_input)

    with pytest.raises(InvalidEvent) as refused:
        checked(CATALOG, value)
    server = decoder(RawEvent(encode_value(value)))

    assert isinstance(server, Rejected)
    assert str(refused.value) == server.reason
    assert refused.value.problems[0].field == field


def test_a_turn_with_a_deadline_decodes_with_it() -> None:
    value = _turn(expires_at=datetime(2024, 6, 1, tzinfo=UTC))

    assert value["expires_at"] == "2024-06-01T00:00:00+00:00"
    checked(CATALOG, value)
    consumed = record_decoder(CATALOG.turns, decode_input)(RawEvent(encode_value(value)))
    assert not isinstance(consumed, Rejected)
    decoded = consumed.event
    assert isinstance(decoded, Turn)
    assert decoded.expires_at == datetime(2024, 6, 1, tzinfo=UTC)
    assert encode_turn(decoded)["expires_at"] == value["expires_at"]


def test_session_end_is_valid_with_a_default_time() -> None:
    value = session_end_event(user_id="ann", session_id="s1")

    assert checked(CATALOG, value)[0] == "p.memstream.turns.v1"


def test_a_flushed_turn_is_valid_and_decodes_flushed_and_others_do_not() -> None:
    flushed, plain = _turn(flush=True), _turn()
    checked(CATALOG, flushed)
    assert "flush" not in plain
    decoded = decode_input(flushed)
    assert isinstance(decoded, Turn) and decoded.flush
    assert encode_turn(decoded)["flush"] is True
    assert not decode_input(plain).flush  # type: ignore[union-attr]
    with pytest.raises(InvalidEvent, match="flush"):
        checked(CATALOG, {**plain, "flush": "yes"})


async def test_only_a_turn_gets_a_receipt() -> None:
    producer = AsyncMemstreamProducer("127.0.0.1:1")  # never started: refused before sending
    with pytest.raises(ValueError, match=r"only a turn\.v1"):
        await producer.publish_receipted(forget_event(user_id="ann"))


async def test_a_producer_for_a_tenant_refuses_users_of_any_other() -> None:
    producer = AsyncMemstreamProducer("127.0.0.1:1", tenant="acme")  # never started
    for user in ["globex:bob", "ACME:ann", "ann", "acme:"]:
        with pytest.raises(InvalidEvent) as refused:
            await producer.publish({"type": "forget.v1", "user_id": user})
        assert [p.field for p in refused.value.problems] == ["user_id"]
    with pytest.raises(RuntimeError, match="not started"):  # acme's own user gets that far
        await producer.publish({"type": "forget.v1", "user_id": "acme:ann"})
