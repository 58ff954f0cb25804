"""The ingest benchmark's idle count: time with no call outstanding at the model's executor."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from memstream_lab.bench.model_busy import ModelBusy


def test_idle_is_the_time_with_no_call_outstanding() -> None:
    release = threading.Event()
    with ThreadPoolExecutor(max_workers=1) as executor:
        with ModelBusy([executor]) as busy:
            before = time.monotonic()
            while time.monotonic() - before < 0.05:  # idle: nothing submitted yet
                pass
            running = executor.submit(release.wait, 5)
            idle_at_submit = busy.idle_seconds
            queued = executor.submit(lambda: None)  # outstanding behind the first
            started = time.monotonic()
            while time.monotonic() - started < 0.05:  # busy: two calls outstanding
                pass
            assert busy.idle_seconds == idle_at_submit  # no idle time counted while busy
            release.set()
            running.result(timeout=5)
            queued.result(timeout=5)
        assert idle_at_submit >= 0.05
        assert 0.0 < busy.idle_share() < 1.0
        assert "submit" not in vars(executor)  # the executor is itself again


def test_a_span_with_no_call_is_all_idle() -> None:
    with ThreadPoolExecutor(max_workers=1) as executor, ModelBusy([executor]) as busy:
        started = time.monotonic()
        while time.monotonic() - started < 0.01:
            pass
    assert busy.idle_share() == 1.0


def test_restart_counts_from_then_on_only() -> None:
    with ThreadPoolExecutor(max_workers=1) as executor, ModelBusy([executor]) as busy:
        time.sleep(0.05)  # idle before the restart: a worker starting, not measured
        busy.restart()
        assert busy.idle_seconds == 0.0
        executor.submit(time.sleep, 0.05).result(timeout=5)  # busy for most of the span
    assert busy.idle_seconds < 0.04
    assert busy.idle_share() < 0.5
