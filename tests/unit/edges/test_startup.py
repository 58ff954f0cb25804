"""Start-up phase lines: what the worker logs is what the restart benchmark reads back."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from memstream.edges.faust.app import OUTAGES, outages
from memstream.edges.startup import phase, process_age_s
from memstream_lab.bench.worker_process import WorkerProcess


def test_the_process_age_counts_from_the_process_start_not_from_the_import() -> None:
    # pytest has run for a while before this test: its age is its whole run so far.
    age = process_age_s()
    assert 0.05 < age < 24 * 3600
    before = time.monotonic()
    later = process_age_s()
    assert later >= age and later - age <= time.monotonic() - before + 0.05


def test_the_benchmark_reads_back_the_phases_the_worker_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="memstream.edges.startup"):
        phase("connections")
        phase("first batch (segmenter, 8 records)")
        phase("connections")  # a second time: the first one counts
    log = tmp_path / "worker.log"
    log.write_text("\n".join(f"2026-11-24 01:24:46,992 INFO x: {m}" for m in caplog.messages))
    reader = WorkerProcess.__new__(WorkerProcess)  # only the log is read
    reader.log_path = log
    found = reader.phases()
    assert list(found) == ["connections", "first batch (segmenter, 8 records)"]
    first, second = found.values()
    assert 0 < first["at_s"] <= second["at_s"] and 0 < first["cpu_s"] <= second["cpu_s"]


def test_an_http_clients_outage_counts_once_the_client_is_loaded() -> None:
    # Without a Qdrant server or an OpenAI endpoint a worker never imports their clients;
    # their transport errors are outages (retried, never dead-lettered) once they are.
    from qdrant_client.http.exceptions import ResponseHandlingException

    assert ResponseHandlingException in outages()
    assert set(OUTAGES) < set(outages())
