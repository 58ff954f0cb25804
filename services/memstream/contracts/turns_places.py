"""The overflow topic's record (`turns_places.v1`): where a tenant's diverted records of one
batch are in the turns log, not the records themselves.

The segmenter used to copy each diverted record to the overflow (sealing a turn in words
first); that copy was what a flood cost the main path. A place costs a few bytes and is
written once a batch and tenant, and the turns log already keeps every record in order for
its retention: the overflow's consumer reads the records back from there (docs/fair-share.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memstream.contracts.records import encode_value

TURNS_PLACES_TYPE = "turns_places.v1"


@dataclass(frozen=True, slots=True)
class TurnsPlaces:
    """Records of one partition of the turns log, named by offset, each with its user (what
    the overflow ledger holds them by, whether or not they can still be read)."""

    partition: int
    users: Mapping[str, tuple[int, ...]]  # user id -> offsets, ascending

    def in_log_order(self) -> list[tuple[int, str]]:
        """(offset, user) of every record, in the order the turns log holds them."""
        return sorted((offset, user) for user, offsets in self.users.items() for offset in offsets)


def places_of(partition: int, records: Sequence[tuple[str, int]]) -> TurnsPlaces:
    """The places of `records` ((user, offset) of one partition of the turns log)."""
    users: dict[str, list[int]] = {}
    for user, offset in records:
        users.setdefault(user, []).append(offset)
    return TurnsPlaces(partition, {u: tuple(sorted(o)) for u, o in users.items()})


def encode_places(places: TurnsPlaces) -> bytes:
    value = {
        "type": TURNS_PLACES_TYPE,
        "partition": places.partition,
        "users": {user: list(offsets) for user, offsets in places.users.items()},
    }
    return encode_value(value)


def decode_places(value: bytes) -> TurnsPlaces | None:
    """The places a record names; None for any other record (a copy forwarded by a version
    that copied the records)."""
    try:
        doc = json.loads(value)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("type") != TURNS_PLACES_TYPE:
        return None
    partition, users = doc.get("partition"), doc.get("users")
    if not isinstance(partition, int) or not isinstance(users, dict):
        return None
    found: dict[str, tuple[int, ...]] = {}
    for user, offsets in users.items():
        if not isinstance(offsets, list) or not all(isinstance(o, int) for o in offsets):
            return None
        found[user] = tuple(sorted(offsets))
    return TurnsPlaces(partition, found)
