"""Answer coverage: normalised content words of the gold answer found in the recalled text."""

from __future__ import annotations

from memstream_lab.eval.coverage import answer_coverage, content_terms
from memstream_lab.eval.metrics import Outcome, by_category, paired_difference
from memstream_lab.eval.report import NO_SUMMARIES, Report
from memstream_lab.eval.results import MethodResult, best_flat_at, interpolate


def test_dates_agree_whatever_the_order_ordinals_or_abbreviations() -> None:
    assert content_terms("May 7th, 2023") == content_terms("7 May 2023")
    assert content_terms("Sept 3") == content_terms("3 September")


def test_number_words_become_digits_and_stopwords_go() -> None:
    assert content_terms("two of the dogs") == content_terms("2 dog")
    assert content_terms("it was in the") == frozenset()


def test_coverage_is_the_share_of_answer_words_found_across_texts() -> None:
    recalled = ["Caroline: I adopted 2 dogs", "Profile: Caroline paints sunsets"]
    assert answer_coverage("Two dogs; painting", recalled) == 1.0
    assert answer_coverage("dogs and a cat", recalled) == 0.5
    assert answer_coverage("the", recalled) is None
    assert answer_coverage("dogs", []) == 0.0


def test_summaries_average_coverage_over_questions_that_have_it() -> None:
    outcomes = [
        Outcome(1, ("a",), ("a",), 10, 1.0, coverage=1.0),
        Outcome(1, ("a",), (), 10, 1.0, coverage=0.0),
        Outcome(4, ("a",), (), 10, 1.0, coverage=None),
    ]
    summaries = by_category(outcomes)
    assert summaries["overall"].answer_coverage == 0.5
    assert summaries["single-hop"].answer_coverage is None


def test_interpolation_between_and_beyond_the_points() -> None:
    points = [(100.0, 0.2), (300.0, 0.6), (700.0, 0.8)]
    assert interpolate(points, 200.0) == 0.4
    assert interpolate(points, 500.0) == 0.7
    assert abs(interpolate(points, 50.0) - 0.1) < 1e-9  # the first segment extends
    assert abs(interpolate(points, 900.0) - 0.9) < 1e-9  # the last segment extends


def _method(name: str, kind: str, tokens: int, coverage: float) -> MethodResult:
    outcomes = [Outcome(c, ("a",), ("a",), tokens, 1.0, coverage=coverage) for c in (1, 4)]
    return MethodResult(name, kind, name, by_category(outcomes))  # type: ignore[arg-type]


def test_coverage_bar_compares_with_the_best_flat_curve_and_no_summaries() -> None:
    flats = [
        _method("flat-dense@10", "flat", 200, 0.4),
        _method("flat-dense@20", "flat", 400, 0.6),
        _method("flat-bm25@10", "flat", 200, 0.5),
        _method("flat-bm25@20", "flat", 400, 0.55),
    ]
    assert abs((best_flat_at(flats, 300, "overall") or 0) - 0.525) < 1e-9
    ours = [
        _method("memstream:default", "memstream", 300, 0.6),
        _method("memstream:no-summaries", "memstream", 300, 0.5),
    ]
    bar = Report([*ours, *flats]).coverage_bar()
    assert bar["memstream:default"]["beats_flat"] is True
    assert bar["memstream:default"]["beats_no_summaries"] is True
    assert bar["memstream:no-summaries"]["beats_flat"] is False
    assert "beats_no_summaries" not in bar["memstream:no-summaries"]


def test_the_paired_difference_with_no_summaries_has_a_bootstrap_interval() -> None:
    def method(name: str, scores: list[float]) -> MethodResult:
        outcomes = [Outcome(4, ("a",), ("a",), 100, 1.0, coverage=s) for s in scores]
        per_question = {("26", i): s for i, s in enumerate(scores)}
        return MethodResult(name, "memstream", name, by_category(outcomes), coverages=per_question)

    plain = [0.5, 0.0, 1.0, 0.5] * 25
    better = [s + 0.1 if i % 2 else s for i, s in enumerate(plain)]  # +0.05 on average
    bar = Report([method("memstream:default", better), method(NO_SUMMARIES, plain)])
    versus = bar.coverage_bar()["memstream:default"]["versus_no_summaries"]
    assert versus["questions"] == 100
    assert abs(versus["mean"] - 0.05) < 1e-9
    low, high = versus["ci95"]
    assert 0.0 < low < 0.05 < high < 0.1


def test_no_shared_question_means_no_paired_difference() -> None:
    assert paired_difference({"a": 1.0}, {"b": 0.0}) is None
    same = paired_difference({"a": 1.0, "b": 0.0}, {"a": 1.0, "b": 0.0})
    assert same is not None and (same.mean, same.low, same.high) == (0.0, 0.0, 0.0)
