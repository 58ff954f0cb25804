"""What the benchmarks and the evaluation measure with: percentiles, elapsed time, free ports
and the JSON report each one writes.

Two percentiles on purpose: a benchmark reports a measured request (nearest rank), while the
evaluation summarises scores the way numpy does (linear interpolation between ranks).
"""

from __future__ import annotations

import json
import math
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


def nearest_rank(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (no interpolation: every figure is a measured request)."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation between ranks (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 100.0:
        raise ValueError("q must be in [0, 100]")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def ms_since(started: float) -> float:
    """Milliseconds since `started`, a `time.perf_counter()` reading."""
    return (time.perf_counter() - started) * 1000


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_report(
    path: Path, report: Mapping[str, Any], *, default: Callable[[Any], Any] | None = None
) -> None:
    """Write a benchmark's report as indented JSON, making its directory if need be
    (`default`, as for `json.dumps`, turns what JSON has no type for into something it has)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=default) + "\n")
