"""The token curve: budgets parsed, points grouped, memstream against the best flat baseline
per budget and category, in results.md, results.json and the plot; a run without budgets
writes what it wrote before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstream.entrypoints.cli import app
from memstream_lab.eval.curve import curve_json, curve_markdown, leads, parse_budgets
from memstream_lab.eval.metrics import OVERALL, Outcome, by_category
from memstream_lab.eval.report import PLOT_PNG, RESULTS_JSON, Report, markdown, write_report
from memstream_lab.eval.results import MethodKind, MethodResult, best_flat_at
from memstream_lab.eval.variants import PRIMARY, VARIANTS, at_budget, curve_variants

MULTI, SINGLE = "multi-hop", "single-hop"


def point(
    name: str,
    kind: MethodKind,
    tokens: int,
    multi: float,
    single: float,
    budget: int | None,
    matched: bool = False,
) -> MethodResult:
    """A method with one multi-hop and one single-hop question: recall and coverage alike."""
    outcomes = [
        Outcome(1, ("a", "b"), ("a", "b")[: round(2 * multi)], tokens, 1.0, coverage=multi),
        Outcome(4, ("a", "b"), ("a", "b")[: round(2 * single)], tokens, 1.0, coverage=single),
    ]
    return MethodResult(name, kind, name, by_category(outcomes), budget=budget, matched=matched)


def curve() -> list[MethodResult]:
    return [
        point("memstream:default", "memstream", 540, 0.5, 1.0, None),
        point("flat-hybrid@20", "flat", 750, 0.5, 0.5, None),
        point("flat-bm25@1500tok", "flat", 1490, 1.0, 0.5, 1500),
        point("memstream:default@600tok", "memstream", 300, 0.5, 1.0, 600),
        point("flat-hybrid@600tok", "flat", 590, 0.0, 0.5, 600),
        point("flat-bm25@600tok", "flat", 595, 0.5, 0.5, 600),
        point("memstream:default@1500tok", "memstream", 900, 1.0, 1.0, 1500),
        point("flat-hybrid@1500tok", "flat", 1480, 0.5, 1.0, 1500),
        point("flat-hybrid@300tok", "flat", 298, 0.0, 0.5, 600, matched=True),
        point("flat-hybrid@900tok", "flat", 899, 1.0, 0.5, 1500, matched=True),
    ]


def test_budgets_parse_to_distinct_ascending_positive_numbers() -> None:
    assert parse_budgets("600,1500,4000") == (600, 1500, 4000)
    assert parse_budgets(" 4000, 600,,600 ") == (600, 4000)
    for bad in ("", "0", "-5", "600,abc", "1.5"):
        with pytest.raises(ValueError):
            parse_budgets(bad)


def test_the_command_refuses_a_bad_budget_before_running_anything(tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = ["eval", "locomo", "--out", str(out), "--budgets", "600,zero"]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 2
    assert "zero" in result.output
    assert not out.exists()


def test_curve_variants_are_the_primary_with_its_ceiling_at_each_budget() -> None:
    primary = next(v for v in VARIANTS if v.name == PRIMARY)
    points = curve_variants((600, 4000))
    assert [v.method for v in points] == ["memstream:default@600tok", "memstream:default@4000tok"]
    assert [(v.max_tokens, v.budget) for v in points] == [(600, 600), (4000, 4000)]
    assert all(v.options == primary.options and v.fit is primary.fit for v in points)
    # Records of another ceiling are never taken for this one's.
    assert len({primary.fingerprint, *(v.fingerprint for v in points)}) == 3
    with pytest.raises(ValueError):
        at_budget(primary, 0)


def test_memstream_meets_the_best_flat_of_each_category_at_each_budget() -> None:
    found = {(c.budget, c.measure, c.category): c for c in leads(curve(), [MULTI, SINGLE])}
    assert len(found) == 2 * 2 * 3  # budgets x measures x (overall + two categories)
    multi = found[(600, "evidence recall", MULTI)]
    assert (multi.memstream, multi.best_flat, multi.best_flat_method) == (
        0.5,
        0.5,
        "flat-bm25@600tok",
    )
    assert multi.ahead is False  # a tie is not a lead
    single = found[(600, "answer coverage", SINGLE)]
    assert (single.memstream, single.best_flat, single.ahead) == (1.0, 0.5, True)
    overall = found[(1500, "evidence recall", OVERALL)]
    # At 1500 bm25 and hybrid tie at 0.75 overall; memstream recalls everything.
    assert overall.best_flat == 0.75 and overall.memstream == 1.0 and overall.ahead is True


def test_memstream_also_meets_the_flat_baselines_filled_to_its_own_tokens() -> None:
    found = {
        (c.budget, c.measure, c.category): c
        for c in leads(curve(), [MULTI, SINGLE], same_tokens=True)
    }
    assert len(found) == 2 * 2 * 3
    at_600 = found[(600, "answer coverage", OVERALL)]
    assert (at_600.memstream, at_600.best_flat, at_600.best_flat_method) == (
        0.75,
        0.25,
        "flat-hybrid@300tok",
    )
    at_1500 = found[(1500, "evidence recall", MULTI)]
    assert (at_1500.memstream, at_1500.best_flat, at_1500.ahead) == (1.0, 1.0, False)
    # Without points at memstream's tokens there is nothing to compare with.
    ceilings = [m for m in curve() if not m.matched]
    assert leads(ceilings, [MULTI], same_tokens=True) == []


def test_the_curve_tables_list_every_point_and_every_comparison() -> None:
    lines = curve_markdown(curve(), [MULTI, SINGLE])
    text = "\n".join(lines)
    assert "| 600 | **memstream:default@600tok** | 300 | 0.750 | 0.500 | 1.000 |" in text
    assert "| 1500 | flat-bm25@1500tok | 1490 |" in text
    assert "flat-hybrid@20" not in text  # top-k methods are not points of the curve
    assert "| 600 | answer coverage | **0.750** / 0.500 (bm25) | 0.500 / 0.500 (bm25) |" in text
    assert "| 600 | flat-hybrid@300tok | 298 |" in text
    same_tokens = text.split("at the same tokens")[1]
    assert "| 600 | answer coverage | **0.750** / 0.250 (hybrid) |" in same_tokens
    assert curve_markdown([m for m in curve() if m.budget is None], [MULTI]) == []


def test_the_curve_in_results_json_and_the_plot(tmp_path: Path) -> None:
    data = curve_json(curve(), [MULTI, SINGLE])
    assert data["budgets"] == [600, 1500]
    assert [p["method"] for p in data["points"]][:3] == [
        "memstream:default@600tok",
        "flat-bm25@600tok",
        "flat-hybrid@600tok",
    ]
    assert data["points"][0]["answer_coverage"] == {OVERALL: 0.75, MULTI: 0.5, SINGLE: 1.0}
    write_report(Report(curve()), tmp_path)
    written = json.loads((tmp_path / RESULTS_JSON).read_text())
    assert written["token_curve"] == json.loads(json.dumps(data))
    assert (tmp_path / PLOT_PNG).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_budgets_the_report_is_what_it_was() -> None:
    plain = [m for m in curve() if m.budget is None]
    report = Report(plain)
    assert "token_curve" not in report.to_json()
    assert "Token curve" not in markdown(report)
    # Points filled to a budget never join the top-k curves the coverage bar interpolates.
    assert best_flat_at(curve(), 750, OVERALL) == best_flat_at(plain, 750, OVERALL)
    assert (
        Report(curve()).coverage_bar()["memstream:default"]
        == report.coverage_bar()["memstream:default"]
    )
