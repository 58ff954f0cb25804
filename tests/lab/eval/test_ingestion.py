"""The eval's replay clock: still at the replay's first instant until every event is out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memstream_lab.eval.ingestion import ReplayClock


def test_the_clock_stands_still_until_released_then_follows_the_wall() -> None:
    first = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    clock = ReplayClock(first)
    assert clock() == first
    assert clock() == first
    clock.release()
    assert abs(clock() - datetime.now(UTC)) < timedelta(seconds=5)
