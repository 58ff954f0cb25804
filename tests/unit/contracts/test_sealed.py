"""The sealed envelope: what it hides opens only under its user's key, as itself, and the
envelope is a valid value of the topics that carry it."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import pytest

from memstream.contracts.catalog import load_catalog
from memstream.contracts.codec import memory_event
from memstream.contracts.sealed import (
    SEALED_LETTER_TYPE,
    EnvelopeError,
    is_sealed,
    new_data_key,
    open_sealed,
    seal,
)
from memstream.domain.models import Level, MemoryNode

AT = datetime(2024, 5, 1, 9, 30, tzinfo=UTC)
CATALOG = load_catalog("")


def memory(user: str = "ann", text: str = "Ann keeps a marmoset called Quibble.") -> dict:
    return memory_event(MemoryNode(f"{user}-m1", user, Level.SEGMENT, AT, AT, text))


def test_a_sealed_value_opens_as_it_was_and_shows_none_of_its_words() -> None:
    key, value = new_data_key(), memory()
    sealed = seal(value, key)
    assert is_sealed(sealed) and not is_sealed(value)
    assert "marmoset" not in json.dumps(sealed) and "Quibble" not in json.dumps(sealed)
    assert sealed["user_id"] == "ann" and sealed["sealed_type"] == "memory.v1"
    assert open_sealed(sealed, key) == value
    assert seal(value, key)["nonce"] != sealed["nonce"]  # a fresh nonce per record


def test_the_envelope_is_a_valid_value_of_the_memories_and_dead_letter_topics() -> None:
    sealed = seal(memory(), new_data_key())
    assert CATALOG.memories.validate(sealed) == []
    letter = {"type": "dead_letter.v1", "user_id": "ann", "reason": "bad"}
    assert CATALOG.dlq.validate(seal(letter, new_data_key(), SEALED_LETTER_TYPE)) == []
    # The memories topic does not hide dead letters, nor the reverse.
    assert CATALOG.dlq.validate(sealed) != []


def test_another_key_does_not_open_it() -> None:
    sealed = seal(memory(), new_data_key())
    with pytest.raises(EnvelopeError, match="does not open"):
        open_sealed(sealed, new_data_key())


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"user_id": "bob"}, "does not open"),  # moved under another user
        ({"sealed_type": "fact.v1"}, "does not open"),  # relabelled
        ({"type": SEALED_LETTER_TYPE}, "does not open"),  # moved to the other topic
        ({"type": "memory.v1"}, "not a sealed envelope"),
        ({"v": 2}, "version"),
        ({"v": None}, "version"),
        ({"nonce": "not base64!"}, "does not open"),
        ({"ciphertext": ""}, "does not open"),
        ({"user_id": 7}, "names its user_id"),
    ],
)
def test_an_altered_envelope_is_refused(change: dict, expected: str) -> None:
    key = new_data_key()
    sealed = {**seal(memory(), key), **change}
    with pytest.raises(EnvelopeError, match=expected):
        open_sealed(sealed, key)


def test_a_flipped_bit_in_the_ciphertext_is_refused() -> None:
    key = new_data_key()
    sealed = seal(memory(), key)
    raw = bytearray(base64.b64decode(sealed["ciphertext"]))
    raw[0] ^= 1
    with pytest.raises(EnvelopeError):
        open_sealed({**sealed, "ciphertext": base64.b64encode(bytes(raw)).decode()}, key)
