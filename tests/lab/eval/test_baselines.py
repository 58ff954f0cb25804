"""The flat baselines: exact BM25 on a corpus small enough to check by hand, ranking, what a
method returns (top-k or within a token budget) and the date a returned message carries."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pytest

from memstream.domain.models import Turn
from memstream.domain.segment_text import render_segment
from memstream.domain.tokens import count_tokens
from memstream_lab.eval.baselines import (
    Bm25,
    FlatIndex,
    FlatMethod,
    dated_message,
    flat_methods,
    matched_methods,
)


def test_bm25_matches_the_okapi_formula_by_hand() -> None:
    docs = [["hike", "mountain"], ["hike", "lake", "lake"], ["paint"]]
    bm25 = Bm25(docs, k1=1.2, b=0.75)
    avg = 2.0  # (2 + 3 + 1) / 3

    def idf(df: int) -> float:
        return math.log(1 + (3 - df + 0.5) / (df + 0.5))

    def part(tf: int, length: int, df: int) -> float:
        return idf(df) * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * length / avg))

    scores = bm25.scores(["lake", "hike"])
    assert scores[0] == pytest.approx(part(1, 2, 2))
    assert scores[1] == pytest.approx(part(2, 3, 1) + part(1, 3, 2))
    assert scores[2] == 0.0


def test_bm25_counts_a_repeated_query_term_once_and_ignores_unknown_terms() -> None:
    bm25 = Bm25([["lake"], ["hike"]])
    assert bm25.scores(["lake", "lake", "zebra"]).tolist() == bm25.scores(["lake"]).tolist()


def test_rarer_terms_weigh_more() -> None:
    bm25 = Bm25([["common", "rare"], ["common"], ["common"]])
    scores = bm25.scores(["rare"])
    assert scores[0] > 0 and scores[1] == 0


def index() -> FlatIndex:
    texts = ["Ann: we hiked the mountain", "Bob: I painted a lake", "Ann: lunch was fine"]
    # Unit vectors: the query vector [1, 0] is closest to message 2 (dense disagrees with BM25).
    vectors = np.array([[0.0, 1.0], [0.6, 0.8], [1.0, 0.0]], dtype=np.float32)
    return FlatIndex(["D1:1", "D1:2", "D1:3"], texts, vectors)


def test_each_scorer_ranks_by_its_own_signal() -> None:
    flat = index()
    query = np.array([1.0, 0.0], dtype=np.float32)
    assert flat.search(FlatMethod("dense", 2), "mountain hike", query) == [2, 1]
    assert flat.search(FlatMethod("bm25", 1), "mountain hike", query) == [0]
    # Hybrid is 0.9 dense + 0.1 s/(s+5): a lexical match cannot beat a much closer vector.
    assert flat.search(FlatMethod("hybrid", 1), "mountain hike", query) == [2]


def test_ties_keep_message_order_and_top_k_caps() -> None:
    flat = index()
    query = np.array([0.0, 0.0], dtype=np.float32)
    assert flat.search(FlatMethod("bm25", 10), "nothing matches", query) == [0, 1, 2]


def test_the_nine_flat_methods() -> None:
    names = [m.name for m in flat_methods()]
    assert len(names) == 9
    assert "flat-hybrid@20" in names and "flat-bm25@50" in names and "flat-dense@10" in names


def test_lengths_must_agree() -> None:
    with pytest.raises(ValueError):
        FlatIndex(["a"], ["x", "y"], np.zeros((2, 2), dtype=np.float32))


def test_a_budget_fills_in_rank_order_and_skips_what_no_longer_fits() -> None:
    within_ten = FlatMethod("bm25", max_tokens=10)
    costs = [4, 7, 3, 2, 5]
    # 4 (row 0) fits, 7 (row 1) would make 11, 3 (row 2) makes 7, 2 (row 3) makes 9, 5 not.
    assert within_ten.take([0, 1, 2, 3, 4], costs) == [0, 2, 3]
    assert within_ten.take([1, 4, 0], costs) == [1]
    assert FlatMethod("bm25", max_tokens=1).take([0, 1], costs) == []


def test_search_within_a_budget_spends_the_returned_texts_costs() -> None:
    flat = index()
    query = np.array([1.0, 0.0], dtype=np.float32)
    dense = FlatMethod("dense", max_tokens=10)
    assert flat.search(dense, "", query, [6, 6, 6]) == [2]
    assert flat.search(dense, "", query, [1, 4, 5]) == [2, 1, 0]
    with pytest.raises(ValueError, match="token costs"):
        flat.search(dense, "", query)


def test_a_method_takes_either_top_k_or_a_budget_and_names_which() -> None:
    assert FlatMethod("hybrid", 20).name == "flat-hybrid@20"
    assert FlatMethod("hybrid", max_tokens=1500).name == "flat-hybrid@1500tok"
    with pytest.raises(ValueError):
        FlatMethod("hybrid")
    with pytest.raises(ValueError):
        FlatMethod("hybrid", 20, max_tokens=600)


def test_budgets_add_every_kind_at_each_budget_after_the_top_k_methods() -> None:
    methods = flat_methods((600, 4000))
    assert [m.name for m in methods[:9]] == [m.name for m in flat_methods()]
    assert [m.name for m in methods[9:]] == [
        f"flat-{kind}@{b}tok" for kind in ("dense", "bm25", "hybrid") for b in (600, 4000)
    ]


def test_a_returned_message_is_dated_as_memstream_dates_a_leaf_and_pays_for_it() -> None:
    at = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    turn = Turn("e1", "u1", "s1", 0, "Caroline", "user", "I went yesterday.", at, tz="UTC")
    leaf = render_segment([turn])
    flat = dated_message(at, "Caroline: I went yesterday.")
    assert flat == "8 May 2023, Caroline: I went yesterday."
    assert flat.split(", ")[0] == leaf.split(", ")[0]
    assert count_tokens(flat) > count_tokens("Caroline: I went yesterday.")


def test_matched_methods_fill_every_kind_to_what_memstream_spent_at_each_budget() -> None:
    methods = matched_methods({600: 276, 1500: 673, 4000: 0})
    assert [(m.name, m.matching) for m in methods[:2]] == [
        ("flat-dense@276tok", 600),
        ("flat-dense@673tok", 1500),
    ]
    assert len(methods) == 6  # three kinds, and nothing for a budget memstream spent nothing at
