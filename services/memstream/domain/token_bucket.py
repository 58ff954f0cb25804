"""A token bucket: `rate` tokens a second, at most `burst` saved up; a request takes one."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bucket:
    tokens: float
    at: float  # the clock reading `tokens` was counted at


def full(burst: float, now: float) -> Bucket:
    return Bucket(burst, now)


def take(bucket: Bucket, now: float, rate: float, burst: float) -> tuple[Bucket, float]:
    """The bucket after one request at `now`, and how long the request must wait first:
    0.0 when a token was there (and is taken), else the seconds until one will be (the
    bucket unchanged but refilled to `now`)."""
    at = max(bucket.at, now)  # a clock that steps back refills nothing twice
    tokens = min(burst, bucket.tokens + (at - bucket.at) * rate)
    if tokens >= 1.0:
        return Bucket(tokens - 1.0, at), 0.0
    return Bucket(tokens, at), (1.0 - tokens) / rate
