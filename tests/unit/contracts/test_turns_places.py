"""The overflow's record names places in the turns log: it round-trips, it is what the
catalog's schema describes, and any other record names none."""

from __future__ import annotations

import json

from memstream.contracts.catalog import load_catalog
from memstream.contracts.turns_places import decode_places, encode_places, places_of


def test_places_round_trip_in_the_logs_order_and_match_the_schema() -> None:
    places = places_of(3, [("acme:b", 12), ("acme:a", 10), ("acme:b", 11), ("acme:a", 14)])
    value = encode_places(places)
    assert decode_places(value) == places
    assert places.in_log_order() == [(10, "acme:a"), (11, "acme:b"), (12, "acme:b"), (14, "acme:a")]
    catalog = load_catalog()
    assert catalog.validate(catalog.overflow.name, json.loads(value)) == []


def test_a_copied_turn_or_a_malformed_record_names_no_places() -> None:
    turn = {"type": "turn.v1", "user_id": "acme:a", "text": "hello"}
    assert decode_places(json.dumps(turn).encode()) is None
    assert decode_places(b"not json") is None
    bad = {"type": "turns_places.v1", "partition": 1, "users": {"acme:a": ["7"]}}
    assert decode_places(json.dumps(bad).encode()) is None
