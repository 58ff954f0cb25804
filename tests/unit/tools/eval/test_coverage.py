"""Answer coverage: normalised content words of the gold answer found in the recalled text."""

from __future__ import annotations

from memstream.tools.eval.coverage import answer_coverage, content_terms
from memstream.tools.eval.metrics import Outcome, by_category
from memstream.tools.eval.report import MethodResult, Report, best_flat_at, interpolate


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
