"""The fairness benchmark's `--trace`: spans a real OTLP exporter sends land in the file, and
the slow turns' waits are split by the batches around them."""

from __future__ import annotations

import json
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from memstream_lab.bench.span_file import SpanFile
from memstream_lab.bench.trace_batches import MAIN, OVERFLOW, describe, load


def test_exported_spans_and_notes_are_lines_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    with SpanFile(path) as spans:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=spans.endpoint)))
        with provider.get_tracer("t").start_as_current_span(
            MAIN, attributes={"messaging.batch.message_count": 3}
        ):
            pass
        provider.shutdown()
        spans.note({"kind": "phase", "phase": "flood-1", "start": 0.0, "end": 1.0})
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["name"] == MAIN and lines[0]["kind"] == "span"
    assert lines[0]["attributes"] == {"messaging.batch.message_count": 3}
    assert lines[0]["end"] >= lines[0]["start"] > 1e9  # epoch seconds
    assert lines[1]["phase"] == "flood-1"


def test_a_slow_turn_waits_for_the_batches_before_its_own(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    rows = [
        {"kind": "phase", "phase": "p", "start": 100.0, "end": 101.0},
        {"kind": "span", "name": MAIN, "start": 100.0, "end": 100.15, "attributes": {}},
        {"kind": "span", "name": OVERFLOW, "start": 100.15, "end": 100.2, "attributes": {}},
        {
            "kind": "span",
            "name": MAIN,
            "start": 100.2,
            "end": 100.35,
            "attributes": {"messaging.batch.message_count": 7},
        },
        {"kind": "turn", "phase": "p", "published": 100.05, "freshness_ms": 250.0},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    phases, turns, batches = load(path)
    found = describe(phases[0], turns, batches)
    assert found["main_batches"] == 2 and found["overflow_batches"] == 1
    assert found["main_busy"] == 0.3 and found["overflow_busy"] == 0.05
    assert found["slowest"] == [
        {
            "freshness_ms": 250,
            "until_batch_ms": 150,
            "in_batch_ms": 100,
            "batch_records": 7,
            "meanwhile_main_ms": 100,
            "meanwhile_overflow_ms": 50,
            "sent_s_into_phase": 0.05,
        }
    ]
