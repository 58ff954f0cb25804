"""A message's deadline: its own expires_at or the retention from its time, the earlier."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memstream.domain.expiry import deadline, earliest, split_due
from memstream.domain.models import Turn

TS = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)


def turn(expires_at: datetime | None = None) -> Turn:
    return Turn("e1", "ana", "s1", 0, "Ana", "user", "hi", TS, expires_at=expires_at)


def test_without_either_a_message_is_kept() -> None:
    assert deadline(turn(), None) is None


def test_the_retention_counts_from_the_messages_own_time() -> None:
    assert deadline(turn(), timedelta(days=30)) == TS + timedelta(days=30)


def test_the_earlier_of_expires_at_and_the_retention_applies() -> None:
    soon, late = TS + timedelta(days=1), TS + timedelta(days=90)
    assert deadline(turn(soon), timedelta(days=30)) == soon
    assert deadline(turn(late), timedelta(days=30)) == TS + timedelta(days=30)
    assert deadline(turn(late), None) == late


def test_split_due_gives_what_is_due_and_the_next_deadline() -> None:
    now = TS
    pairs = [("a", now.timestamp() - 1), ("b", now.timestamp()), ("c", now.timestamp() + 60)]
    assert split_due(pairs, now, 5) == (["a", "b"], now + timedelta(seconds=60))
    assert split_due(pairs[:2], now, 5) == (["a", "b"], None)
    assert split_due([], now, 5) == ([], None)
    # More due than one step forgets: the rest is due at once, on the next tick.
    assert split_due(pairs, now, 1) == (["a"], now)
    assert split_due(pairs, now, 2) == (["a", "b"], now + timedelta(seconds=60))


def test_earliest_ignores_missing_times() -> None:
    assert earliest(None, TS, TS - timedelta(1)) == TS - timedelta(1)
    assert earliest(None, None) is None
