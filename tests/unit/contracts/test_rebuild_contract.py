"""`rebuild.v1`: what the schema accepts, and that the Python encoder and decoder agree with it."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memstream.client.events import rebuild_event
from memstream.contracts.catalog import load_catalog
from memstream.contracts.codec import decode_input, encode_rebuild
from memstream.domain.models import Level, RebuildRequested

TURNS = "memstream.turns.v1"


def test_the_whole_history_at_every_level_by_default() -> None:
    value = encode_rebuild("ana", "r1")
    assert value == {"type": "rebuild.v1", "user_id": "ana", "rebuild_id": "r1"}
    assert load_catalog().validate(TURNS, value) == []
    assert decode_input(value) == RebuildRequested("ana", "r1", None, tuple(Level))


def test_from_and_levels_travel_and_decode() -> None:
    value = encode_rebuild("ana", "r2", date(2024, 3, 1), [3, 1, 3])
    assert value["from"] == "2024-03-01" and value["levels"] == [1, 3]
    assert load_catalog().validate(TURNS, value) == []
    decoded = decode_input(value)
    assert decoded == RebuildRequested(
        "ana", "r2", datetime(2024, 3, 1, tzinfo=UTC), (Level.SEGMENT, Level.DAY)
    )


def test_all_five_levels_are_the_default_and_not_sent() -> None:
    assert "levels" not in encode_rebuild("ana", "r3", levels=[5, 4, 3, 2, 1])


def test_the_sdk_builds_the_same_value() -> None:
    assert rebuild_event(user_id="ana", rebuild_id="r1", since=date(2024, 3, 1), levels=[2]) == (
        encode_rebuild("ana", "r1", date(2024, 3, 1), [2])
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"from": "2024-02-30"},
        {"from": "2024-03-01T00:00:00Z"},
        {"levels": []},
        {"levels": [0]},
        {"levels": [6]},
        {"levels": [1, 1]},
        {"rebuild_id": ""},
        {"rebuild_id": "a b"},
        {"extra": 1},
    ],
    ids=[
        "no-such-day",
        "a-time",
        "no-level",
        "level-0",
        "level-6",
        "repeated",
        "blank-id",
        "space-in-id",
        "unknown-field",
    ],
)
def test_bad_values_are_refused(changes: dict[str, object]) -> None:
    value = encode_rebuild("ana", "r1") | changes
    assert load_catalog().validate(TURNS, value) != []
