"""Evidence recall, all-evidence share, percentiles and per-category summaries."""

from __future__ import annotations

import pytest

from memstream_lab.eval.metrics import (
    OVERALL,
    Outcome,
    all_recalled,
    by_category,
    evidence_recall,
    percentile,
    summarise,
)


def outcome(category: int, evidence: tuple[str, ...], recalled: tuple[str, ...]) -> Outcome:
    return Outcome(category, evidence, recalled, tokens=100, latency_ms=10.0)


def test_evidence_recall_is_the_share_of_distinct_evidence_recalled() -> None:
    assert evidence_recall(["D1:1", "D1:2"], ["D1:2", "D9:9"]) == 0.5
    assert evidence_recall(["D1:1", "D1:1"], ["D1:1"]) == 1.0  # duplicates count once
    assert evidence_recall(["D1:1"], []) == 0.0
    assert evidence_recall([], ["D1:1"]) is None  # nothing to recall: not measured


def test_all_recalled_needs_every_evidence_id() -> None:
    assert all_recalled(["a", "b"], ["b", "a", "c"]) is True
    assert all_recalled(["a", "b"], ["a"]) is False
    assert all_recalled([], ["a"]) is None


@pytest.mark.parametrize(
    ("q", "expected"), [(0, 1.0), (50, 2.5), (100, 4.0), (95, 3.85), (25, 1.75)]
)
def test_percentile_interpolates_linearly_like_numpy(q: float, expected: float) -> None:
    assert percentile([4.0, 1.0, 3.0, 2.0], q) == pytest.approx(expected)


def test_percentile_of_one_value_and_bad_input() -> None:
    assert percentile([7.0], 95) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_summary_weighs_each_question_once_and_skips_questions_without_evidence() -> None:
    outcomes = [
        outcome(1, ("a", "b"), ("a",)),  # 0.5, not complete
        outcome(1, ("c",), ("c",)),  # 1.0, complete
        outcome(1, (), ("x",)),  # no evidence: counted for tokens only
    ]
    s = summarise(outcomes)
    assert s.questions == 3
    assert s.with_evidence == 2
    assert s.evidence_recall == pytest.approx(0.75)
    assert s.all_evidence_share == pytest.approx(0.5)
    assert s.tokens_per_query == 100
    assert s.accuracy is None and s.judged == 0


def test_accuracy_counts_judged_questions_only() -> None:
    judged = [
        Outcome(2, ("a",), ("a",), 1, 1.0, correct=True),
        Outcome(2, ("a",), ("a",), 1, 1.0, correct=False),
        Outcome(2, ("a",), ("a",), 1, 1.0, correct=None),
    ]
    s = summarise(judged)
    assert s.judged == 2
    assert s.accuracy == 0.5


def test_by_category_names_categories_and_adds_overall() -> None:
    result = by_category([outcome(1, ("a",), ("a",)), outcome(4, ("a",), ())])
    assert list(result) == ["multi-hop", "single-hop", OVERALL]
    assert result["multi-hop"].evidence_recall == 1.0
    assert result["single-hop"].evidence_recall == 0.0
    assert result[OVERALL].evidence_recall == 0.5
    assert result[OVERALL].questions == 2
