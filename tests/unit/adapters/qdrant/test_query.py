"""The Qdrant query builder shared by QdrantIndex and EdgeIndex."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest
from qdrant_client import models

from memstream.adapters.qdrant.query import (
    DENSE,
    LEXICAL,
    MIN_PREFETCH,
    PREFETCH_FACTOR,
    leaf_query,
    memory_point,
    node_from_payload,
    user_filter,
)
from memstream.domain.models import IndexedMemory, Level, MemoryNode, SparseVector

HALF = 5.0
WORDS = SparseVector((3, 17), (1.0, 2.0))
NO_WORDS = SparseVector((), ())


def query(
    sparse: SparseVector = WORDS, *, weight: float = 0.5, limit: int = 5
) -> models.QueryRequest:
    return leaf_query(
        "alice",
        [0.1, 0.2],
        sparse,
        limit=limit,
        dense_weight=weight,
        level=Level.SESSION,
        lexical_half_score=HALF,
    )


def evaluate(expression: models.Expression, scores: dict[str, float]) -> float:
    """What Qdrant computes for one point whose prefetch scores are `scores`."""
    match expression:
        case float():
            return expression
        case str():
            return scores[expression]
        case models.SumExpression(sum=terms):
            return sum(evaluate(e, scores) for e in terms)
        case models.MultExpression(mult=factors):
            return math.prod(evaluate(e, scores) for e in factors)
        case models.DivExpression(div=div):
            right = evaluate(div.right, scores)
            if right == 0:
                assert div.by_zero_default is not None
                return div.by_zero_default
            return evaluate(div.left, scores) / right
    raise AssertionError(f"unexpected {expression!r}")


def fused(request: models.QueryRequest, dense: float, lexical: float | None) -> float:
    formula = request.query
    assert isinstance(formula, models.FormulaQuery)
    scores = {**(formula.defaults or {}), "$score[0]": dense}
    if lexical is not None:
        scores["$score[1]"] = lexical
    return evaluate(formula.formula, scores)


@pytest.mark.parametrize("weight", [0.0, 0.5, 1.0])
@pytest.mark.parametrize(("dense", "lexical"), [(0.8, 0.0), (0.3, 5.0), (0.0, 12.5), (0.6, None)])
def test_formula_fuses_dense_and_saturated_lexical(
    weight: float, dense: float, lexical: float | None
) -> None:
    want = weight * dense + (1 - weight) * (lexical or 0.0) / ((lexical or 0.0) + HALF)
    assert fused(query(weight=weight), dense, lexical) == pytest.approx(want)


def test_one_match_on_a_rare_term_scores_half_the_lexical_channel() -> None:
    assert fused(query(weight=0.0), 0.9, HALF) == pytest.approx(0.5)


def test_without_content_words_only_the_dense_channel_counts() -> None:
    request = query(NO_WORDS, weight=0.5)
    assert isinstance(request.prefetch, list)
    assert [p.using for p in request.prefetch] == [DENSE]
    assert fused(request, 0.8, None) == pytest.approx(0.4)


def test_both_prefetches_filter_on_the_user_and_level_and_go_deep() -> None:
    request = query()
    want = user_filter("alice", Level.SESSION)
    assert isinstance(request.prefetch, list)
    assert [p.using for p in request.prefetch] == [DENSE, LEXICAL]
    assert all(p.filter == want for p in request.prefetch)
    # The formula ranks only what the prefetches found: no filter to check again on top.
    assert request.filter is None
    assert [p.limit for p in request.prefetch] == [MIN_PREFETCH, MIN_PREFETCH]
    deep = query(limit=40).prefetch
    assert isinstance(deep, list)
    assert [p.limit for p in deep] == [40 * PREFETCH_FACTOR] * 2
    assert request.limit == 5
    assert request.with_payload is False


@pytest.mark.parametrize("weight", [-0.1, 1.5])
def test_dense_weight_outside_zero_to_one_is_refused(weight: float) -> None:
    with pytest.raises(ValueError, match="dense_weight"):
        query(weight=weight)


def test_a_point_holds_both_named_vectors_and_gives_back_its_node() -> None:
    start = datetime(2023, 5, 8, 13, 0, tzinfo=timezone(timedelta(hours=-4)))
    node = MemoryNode(
        id="0b3a4b7e-5d6f-4c1e-9a7b-1234567890ab",
        user_id="alice",
        level=Level.SEGMENT,
        t_start=start,
        t_end=start + timedelta(minutes=5),
        text="Caroline went to a pottery class.",
        parent_id="p1",
        source_ids=("e1", "e2"),
        version=2,
        session_id="s1",
        speakers=("Caroline",),
    )
    point = memory_point(IndexedMemory(node=node, dense=[0.5, 0.5], sparse=WORDS))
    assert point.id == node.id
    assert point.vector == {
        DENSE: [0.5, 0.5],
        LEXICAL: models.SparseVector(indices=[3, 17], values=[1.0, 2.0]),
    }
    assert point.payload is not None
    assert point.payload["t_end"] == (start + timedelta(minutes=5)).timestamp()
    assert node_from_payload(node.id, point.payload) == node  # the user's offset survives
