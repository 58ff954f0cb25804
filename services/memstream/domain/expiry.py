"""When a message must be forgotten: its own `expires_at`, or the deployment's retention.

A turn may carry `expires_at`; a deployment may also keep every message at most a retention
(MEMSTREAM_RETENTION_DAYS), counted from the message's own time (`ts`, when it was said),
not from when memstream received it, so a replay or a late producer gives the same
deadline. The earlier of the two applies. When the deadline passes, the message is forgotten
as a message forget forgets it (the segmenter, on the user's next tick or batch); one whose
deadline has passed when it arrives is stored nowhere.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from memstream.domain.models import Turn


def deadline(turn: Turn, retention: timedelta | None) -> datetime | None:
    """When `turn` must be gone (None: kept until forgotten otherwise)."""
    kept_until = turn.ts + retention if retention else None
    given = turn.expires_at
    if given is None or kept_until is None:
        return given or kept_until
    return min(given, kept_until)


def split_due(
    deadlines: list[tuple[str, float]], now: datetime, limit: int
) -> tuple[list[str], datetime | None]:
    """From (event id, deadline in epoch seconds) pairs, earliest first: the first `limit`
    ids due at `now`, and when the next is due (`now` when more than `limit` are; None:
    none is left)."""
    cutoff = now.timestamp()
    due = [event_id for event_id, at in deadlines if at <= cutoff]
    if len(due) > limit:
        return due[:limit], now
    later = next((at for _, at in deadlines if at > cutoff), None)
    return due, None if later is None else datetime.fromtimestamp(later, tz=now.tzinfo)


def earliest(*times: datetime | None) -> datetime | None:
    """The earliest of the times given (None: none given)."""
    present = [t for t in times if t is not None]
    return min(present) if present else None
