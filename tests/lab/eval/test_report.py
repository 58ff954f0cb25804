"""The three outputs: files written, the table lists every method, the quality bar verdict."""

from __future__ import annotations

import json
from pathlib import Path

from memstream_lab.eval.metrics import OVERALL, Outcome, by_category
from memstream_lab.eval.report import (
    PLOT_PNG,
    RESULTS_JSON,
    RESULTS_MD,
    MethodResult,
    Report,
    markdown,
    write_report,
)


def result(name: str, kind: str, recall_share: float, tokens: int, multi: float) -> MethodResult:
    """A method whose questions recall `recall_share` overall and `multi` on multi-hop."""
    outcomes = [
        Outcome(1, ("a", "b"), ("a", "b")[: round(2 * multi)], tokens, 5.0),
        Outcome(4, ("a", "b"), ("a", "b")[: round(2 * (2 * recall_share - multi))], tokens, 7.0),
    ]
    return MethodResult(name, kind, f"{name} described", by_category(outcomes))  # type: ignore[arg-type]


def methods() -> list[MethodResult]:
    return [
        result("memstream:good", "memstream", 0.75, 500, 1.0),
        result("memstream:costly", "memstream", 1.0, 900, 1.0),
        result("flat-hybrid@20", "flat", 0.5, 600, 0.5),
        result("flat-dense@10", "flat", 0.25, 300, 0.0),
        result("mem0@20", "mem0", 0.5, 600, 0.5),
    ]


def test_write_report_writes_json_markdown_and_png(tmp_path: Path) -> None:
    report = Report(methods(), meta={"dataset": {"questions": 2}}, notes=["a note"])
    paths = write_report(report, tmp_path)
    assert [p.name for p in paths] == [RESULTS_JSON, RESULTS_MD, PLOT_PNG]
    data = json.loads((tmp_path / RESULTS_JSON).read_text())
    assert data["dataset"] == {"questions": 2}
    assert [m["name"] for m in data["methods"]] == [m.name for m in methods()]
    overall = data["methods"][0]["categories"][OVERALL]
    assert overall["evidence_recall"] == 0.75 and overall["tokens_per_query"] == 500
    assert (tmp_path / PLOT_PNG).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_markdown_table_has_a_row_per_method_and_the_notes() -> None:
    text = markdown(Report(methods(), notes=["a note"]))
    for m in methods():
        assert m.name in text
    assert "| method | evidence recall |" in text
    assert "- a note" in text
    assert "accuracy" not in text  # nothing was judged


def test_quality_bar_needs_budget_and_both_recalls() -> None:
    bar = Report(methods()).quality_bar()
    assert bar["reference"] == "flat-hybrid@20"
    assert bar["variants"]["memstream:good"]["passes"] is True
    assert bar["variants"]["memstream:costly"]["passes"] is False  # over 600 tokens
    assert "flat-dense@10" not in bar["variants"]


def test_quality_bar_without_the_reference_method() -> None:
    assert Report(methods()[:2]).quality_bar() == {"reference": None}
