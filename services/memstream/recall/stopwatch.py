"""Per-stage wall times of one recall, in milliseconds (the answer's `timings_ms`)."""

from __future__ import annotations

import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")


@dataclass
class Stopwatch:
    timings: dict[str, float] = field(default_factory=dict)

    async def time(self, stage: str, work: Awaitable[T]) -> T:
        start = time.perf_counter()
        try:
            return await work
        finally:
            self.timings[stage] = round((time.perf_counter() - start) * 1000, 3)
