"""A turn sealed by its producer: sealed with the user's public turn key, it opens only with
the user's data key, as itself, and is a valid value of the turns topic."""

from __future__ import annotations

import json

import pytest

from memstream.contracts.catalog import load_catalog
from memstream.contracts.sealed import EnvelopeError, new_data_key
from memstream.contracts.sealed_turns import open_turn, seal_turn, turn_public_key, turn_sealer

CATALOG = load_catalog("")
TURN = {
    "type": "turn.v1",
    "event_id": "e1",
    "user_id": "acme:ann",
    "session_id": "s1",
    "seq": 0,
    "speaker": "Ann",
    "role": "user",
    "text": "My marmoset Quibble hates thunder.",
    "ts": "2024-05-01T09:30:00+00:00",
}


def test_a_sealed_turn_opens_with_the_data_key_as_it_was_and_shows_no_words() -> None:
    key = new_data_key()
    sealed = seal_turn(TURN, turn_public_key(key))
    shown = json.dumps(sealed)
    assert "Quibble" not in shown and "marmoset" not in shown and 'Ann"' not in shown
    assert (sealed["type"], sealed["user_id"], sealed["sealed_type"]) == (
        "sealed_turn.v1",
        "acme:ann",
        "turn.v1",
    )
    assert open_turn(sealed, key) == TURN
    again = seal_turn(TURN, turn_public_key(key))
    assert again["epk"] != sealed["epk"]  # a fresh ephemeral key per record
    assert CATALOG.turns.validate(sealed) == []


def test_turns_sealed_by_one_sealer_share_its_key_pair_and_each_opens_as_itself() -> None:
    key = new_data_key()
    sealer = turn_sealer(turn_public_key(key))
    later = {**TURN, "event_id": "e2", "seq": 1, "text": "Quibble hid under the bed."}
    first, second = sealer(TURN), sealer(later)
    assert first["epk"] == second["epk"]  # one key agreement for the batch
    assert first["nonce"] != second["nonce"]  # under the one key, a nonce each
    assert (open_turn(first, key), open_turn(second, key)) == (TURN, later)
    with pytest.raises(EnvelopeError, match="does not open"):
        open_turn(first, new_data_key())


def test_the_public_key_is_stable_per_data_key_and_opens_nothing() -> None:
    key = new_data_key()
    assert turn_public_key(key) == turn_public_key(key)
    assert turn_public_key(key) != turn_public_key(new_data_key())
    sealed = seal_turn(TURN, turn_public_key(key))
    with pytest.raises(EnvelopeError, match="does not open"):
        open_turn(sealed, turn_public_key(key))  # the public half is no data key
    with pytest.raises(EnvelopeError, match="does not open"):
        open_turn(sealed, new_data_key())  # after a forget, a new key opens nothing old


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"user_id": "acme:bob"}, "does not open"),  # moved under another user
        ({"sealed_type": "session_end.v1"}, "does not open"),  # relabelled
        ({"type": "sealed.v1"}, "not a sealed envelope of this kind"),
        ({"v": 2}, "version"),
        ({"epk": "AAAA"}, "does not open"),
        ({"ciphertext": ""}, "does not open"),
    ],
)
def test_an_altered_sealed_turn_is_refused(change: dict, expected: str) -> None:
    key = new_data_key()
    sealed = {**seal_turn(TURN, turn_public_key(key)), **change}
    with pytest.raises(EnvelopeError, match=expected):
        open_turn(sealed, key)
