"""CPU seconds spent by the benchmark's own process and its children, over a measured span.

On shared cores the wall-clock rate moves with whatever else runs; the CPU a process spends
on each record does not (much). So the ingest benchmark reports, beside its rates, each
pipeline process's CPU seconds per message: this process (the event loop: the Faust agents,
the handlers, the stores' clients, and the benchmark's publisher), the embedding model's
process, and the embedded servers (the Tansu broker, redis-server).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil

# What a child's command line says it is (the first name that matches wins).
_KINDS = (
    ("tansu", "broker"),
    # The recall API in a process of its own (`memstream up` with MEMSTREAM_UP_API_PROCESS).
    ("app() serve", "api"),
    ("memstream.entrypoints.cli", "stack"),  # `memstream up` as a child (read-your-writes)
    ("redis-server", "redis"),
    ("bench.publisher", "publisher"),
    ("bench.flood_publisher", "flood"),  # the fairness benchmark's flooding tenant
    ("multiprocessing", "model"),
)


def _kind(process: psutil.Process) -> str:
    try:
        line = " ".join(process.cmdline())
    except psutil.Error:
        return "other"
    return next((kind for marker, kind in _KINDS if marker in line), "other")


def _cpu_seconds(process: psutil.Process) -> float:
    # A child's own threads only: its children are counted on their own.
    times = process.cpu_times()
    return float(times.user + times.system)


def snapshot() -> dict[int, tuple[str, float]]:
    """pid -> (kind, CPU seconds so far) for this process and every live descendant."""
    me = psutil.Process(os.getpid())
    found: dict[int, tuple[str, float]] = {me.pid: ("event_loop", _cpu_seconds(me))}
    for child in me.children(recursive=True):
        try:
            found[child.pid] = (_kind(child), _cpu_seconds(child))
        except psutil.Error:
            continue  # ended between the listing and the read
    return found


@dataclass(frozen=True)
class CpuSpan:
    """CPU seconds per kind of process between two snapshots (a process born in between
    counts from zero; one that ended in between is missing from the end and not counted)."""

    seconds: dict[str, float]

    @classmethod
    def between(
        cls, start: dict[int, tuple[str, float]], end: dict[int, tuple[str, float]]
    ) -> CpuSpan:
        seconds: dict[str, float] = {}
        for pid, (kind, total) in end.items():
            before = start.get(pid, (kind, 0.0))[1]
            seconds[kind] = seconds.get(kind, 0.0) + max(0.0, total - before)
        return cls(seconds)

    def total_per_record(self, records: int) -> float:
        """CPU seconds per record, all processes together."""
        return sum(self.seconds.values()) / records

    def per_record_ms(self, records: int) -> dict[str, float]:
        """Milliseconds of CPU per record, per kind of process and in all."""
        per = {k: round(1000 * s / records, 3) for k, s in sorted(self.seconds.items())}
        per["total"] = round(1000 * sum(self.seconds.values()) / records, 3)
        return per


def memory_mb() -> dict[str, float]:
    """Proportional set size (shared pages split between their users, so the figures add up
    as a container's memory does) of this process and its descendants, in MB, by kind."""
    me = psutil.Process(os.getpid())
    found: dict[str, float] = {}
    for process in [me, *me.children(recursive=True)]:
        try:
            kind = "event_loop" if process.pid == me.pid else _kind(process)
        except psutil.Error:
            continue
        if (mb := pss_mb(process)) is not None:
            found[kind] = found.get(kind, 0.0) + mb
    return {kind: round(mb) for kind, mb in sorted(found.items())}


def pss_mb(process: psutil.Process) -> float | None:
    """A process's proportional set size in MB; None once it is gone."""
    try:
        return float(getattr(process.memory_full_info(), "pss", 0.0)) / 2**20
    except psutil.Error:
        return None
