"""The token bucket of the API's per-tenant rates."""

from __future__ import annotations

import pytest

from memstream.domain.token_bucket import full, take


def test_a_burst_goes_through_then_requests_wait_for_the_rate() -> None:
    bucket = full(3, now=0.0)
    waits = []
    for _ in range(4):
        bucket, wait = take(bucket, 0.0, rate=2.0, burst=3)
        waits.append(wait)
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3] == pytest.approx(0.5)  # one token at 2 a second


def test_tokens_refill_with_time_up_to_the_burst() -> None:
    bucket = full(2, now=0.0)
    bucket, _ = take(bucket, 0.0, rate=1.0, burst=2)
    bucket, _ = take(bucket, 0.0, rate=1.0, burst=2)
    bucket, wait = take(bucket, 0.25, rate=1.0, burst=2)
    assert wait == pytest.approx(0.75)
    bucket, wait = take(bucket, 100.0, rate=1.0, burst=2)
    assert wait == 0.0 and bucket.tokens == pytest.approx(1.0)  # capped at 2, one taken


def test_a_clock_going_back_adds_nothing() -> None:
    bucket = full(1, now=10.0)
    bucket, _ = take(bucket, 10.0, rate=1.0, burst=1)
    _, wait = take(bucket, 5.0, rate=1.0, burst=1)
    assert wait == pytest.approx(1.0)
