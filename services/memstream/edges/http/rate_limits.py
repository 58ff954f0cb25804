"""Per-tenant request rates of the API: one token bucket per tenant, in this process.

Operators are not limited (their routes repair and rebuild the deployment). With several API
processes (`MEMSTREAM_API_WORKERS`) each holds its own buckets, so a tenant's rate over the pod
is up to the workers times the setting.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from memstream.domain.tenancy import Caller
from memstream.domain.token_bucket import Bucket, full, take


class TenantRateLimits:
    def __init__(
        self,
        rate_per_s: float,
        burst: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_limited: Callable[[str], None] | None = None,
    ) -> None:
        if rate_per_s <= 0 or burst < 1:
            raise ValueError("a rate limit needs a positive rate and a burst of at least 1")
        self._rate = rate_per_s
        self._burst = burst
        self._clock = clock
        self._on_limited = on_limited
        self._buckets: dict[str, Bucket] = {}
        self._lock = threading.Lock()  # the API's thread pool may call in too

    def wait_s(self, caller: Caller) -> float:
        """0.0: the request goes ahead (a token taken); else seconds until it may."""
        if caller.tenant is None:
            return 0.0
        with self._lock:
            now = self._clock()
            bucket = self._buckets.get(caller.tenant) or full(self._burst, now)
            self._buckets[caller.tenant], wait = take(bucket, now, self._rate, self._burst)
        if wait > 0 and self._on_limited is not None:
            self._on_limited(caller.tenant)
        return wait

    def forget_tenants_except(self, tenants: frozenset[str]) -> None:
        """Drop the buckets of tenants no longer configured, so their number stays bounded."""
        with self._lock:
            for gone in set(self._buckets) - tenants:
                del self._buckets[gone]
