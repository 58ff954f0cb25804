"""Deterministic node ids, so reprocessing an event or a window overwrites instead of adding.

Ids are uuid5 strings over a JSON array of their parts; JSON keeps the parts apart whatever
characters they contain, so distinct inputs never collapse into one name.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Sequence
from datetime import datetime

from memstream.domain.calendar import to_utc
from memstream.domain.models import Level

# Fixed for the life of the data: changing it renames every node ever written.
NAMESPACE = uuid.UUID("28537138-4e46-4f24-93e5-56487cd5f71e")


def segment_id(user_id: str, event_ids: Sequence[str]) -> str:
    """Id of the L1 node built from these events, in the given order."""
    if isinstance(event_ids, str):
        raise TypeError("event_ids must be a sequence of ids, not one string")
    if not event_ids:
        raise ValueError("an L1 segment needs at least one event id")
    return _uuid(user_id, Level.SEGMENT.label, *event_ids)


def window_node_id(
    user_id: str, level: Level, window_start: datetime, session_id: str | None = None
) -> str:
    """Id of the L2-L5 node of a window; L2 needs the session id, other levels refuse one."""
    # The cache is keyed on the instant: two local times of one zone compare (and hash) by
    # their wall clocks, so 01:30 before and after the clocks go back would share an entry.
    return _window_node_id(user_id, level, to_utc(window_start), session_id)


# A worker names the same few windows message after message (every L1 names its session's
# node): a uuid5 each time was a visible share of the reducer's CPU. Pure, so cached.
@functools.lru_cache(maxsize=4096)
def _window_node_id(
    user_id: str, level: Level, window_start: datetime, session_id: str | None
) -> str:
    if level == Level.SEGMENT:
        raise ValueError("L1 ids come from their event ids: use segment_id")
    if (level == Level.SESSION) != (session_id is not None):
        raise ValueError(f"session_id is required for L2 and only for L2, got level {level}")
    parts = [user_id, Level(level).label, window_start.isoformat()]
    if session_id is not None:
        parts.append(session_id)
    return _uuid(*parts)


def _uuid(*parts: str) -> str:
    return str(uuid.uuid5(NAMESPACE, json.dumps(parts)))
