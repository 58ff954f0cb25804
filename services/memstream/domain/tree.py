"""Structural rules of the Temporal Memory Tree: a parent covers its children's intervals.

Intervals are compared in UTC, because two datetimes sharing a tzinfo compare by wall clock.
"""

from __future__ import annotations

from datetime import datetime

from memstream.domain.calendar import Interval, to_utc


def covers(
    parent_start: datetime, parent_end: datetime, child_start: datetime, child_end: datetime
) -> bool:
    """Whether the parent interval covers the child interval (bounds included)."""
    return to_utc(parent_start) <= to_utc(child_start) and to_utc(child_end) <= to_utc(parent_end)


def grow(interval: Interval, child_interval: Interval) -> Interval:
    """The smallest interval covering both: a parent stretched over a child that overruns it."""
    (start, end), (child_start, child_end) = interval, child_interval
    # min/max keep the first of equal bounds, so an unchanged parent keeps its own zone.
    return min(start, child_start, key=to_utc), max(end, child_end, key=to_utc)
