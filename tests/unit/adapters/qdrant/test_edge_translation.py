"""The translation of the builder's qdrant-client models into qdrant-edge objects."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from qdrant_client import models
from qdrant_edge import SparseVector as EdgeSparseVector

from memstream.adapters.qdrant.edge_translation import (
    edge_filter,
    edge_memory_point,
    edge_request,
)
from memstream.adapters.qdrant.query import (
    DENSE,
    LEXICAL,
    fused_formula,
    leaf_query,
    memory_point,
    user_filter,
)
from memstream.domain.models import IndexedMemory, Level, MemoryNode, SparseVector


def request(sparse: SparseVector) -> models.QueryRequest:
    return leaf_query(
        "alice",
        [0.1, 0.2],
        sparse,
        limit=5,
        dense_weight=0.5,
        level=Level.SEGMENT,
        lexical_half_score=5.0,
    )


@pytest.mark.parametrize("sparse", [SparseVector((3,), (1.0,)), SparseVector((), ())])
def test_every_leaf_query_translates(sparse: SparseVector) -> None:
    translated = edge_request(request(sparse))
    assert translated.limit == 5
    assert len(translated.prefetches) == (2 if sparse.indices else 1)
    assert [p.limit for p in translated.prefetches] == [50] * len(translated.prefetches)


def test_queries_of_the_same_weights_share_one_formula() -> None:
    first, second = request(SparseVector((3,), (1.0,))), request(SparseVector((4,), (2.0,)))
    assert first.query is second.query  # built, validated and translated once
    assert request(SparseVector((), ())).query is not first.query  # the dense term alone
    assert fused_formula(0.5, 5.0, True) is first.query
    assert fused_formula(0.6, 5.0, True) is not first.query
    assert edge_request(first).limit == edge_request(second).limit == 5


def test_a_dense_search_among_given_ids_filters_on_them_alone() -> None:
    ids = ["6f9619ff-8b86-d011-b42d-00cf4fc964ff", "0b3bd8e4-77f8-5b5b-9c1b-7d3a0d6c2f10"]
    built = leaf_query(
        "alice",
        [0.1, 0.2],
        SparseVector((3,), (1.0,)),
        limit=5,
        dense_weight=0.5,
        level=Level.SEGMENT,
        lexical_half_score=5.0,
        dense_among=ids,
    )
    assert isinstance(built.prefetch, list)
    dense, lexical = built.prefetch
    assert dense.filter == models.Filter(must=[models.HasIdCondition(has_id=ids)])
    assert lexical.filter == user_filter("alice", Level.SEGMENT)  # every point of the user
    translated = edge_request(built)
    [among] = translated.prefetches[0].filter.must  # type: ignore[union-attr]
    assert {str(i) for i in among.point_ids} == set(ids)  # type: ignore[union-attr]


def test_a_field_it_does_not_translate_is_refused() -> None:
    with_threshold = request(SparseVector((), ())).model_copy(update={"score_threshold": 0.2})
    with pytest.raises(TypeError, match="score_threshold"):
        edge_request(with_threshold)


def test_a_model_it_does_not_translate_is_refused() -> None:
    fusion = request(SparseVector((), ())).model_copy(
        update={"query": models.FusionQuery(fusion=models.Fusion.RRF)}
    )
    with pytest.raises(TypeError, match="FusionQuery"):
        edge_request(fusion)
    with pytest.raises(TypeError, match="should"):
        edge_filter(models.Filter(must=user_filter("alice").must, should=[]))


def test_a_point_made_for_the_edge_is_the_point_the_builder_makes() -> None:
    node = MemoryNode(
        id="0b3a4b7e-5d6f-4c1e-9a7b-1234567890ab",
        user_id="alice",
        level=Level.SEGMENT,
        t_start=datetime(2023, 5, 8, 13, 0, tzinfo=UTC),
        t_end=datetime(2023, 5, 8, 13, 5, tzinfo=UTC),
        text="Caroline went to a pottery class.",
        source_ids=("e1",),
    )
    memory = IndexedMemory(node=node, dense=(0.5, 0.25), sparse=SparseVector((3, 17), (1.0, 2.5)))
    built, made = memory_point(memory), edge_memory_point(memory)
    assert isinstance(built.vector, dict)
    assert str(made.id) == built.id
    assert made.payload == built.payload
    assert set(made.vector) == set(built.vector) == {DENSE, LEXICAL}
    assert made.vector[DENSE] == built.vector[DENSE]
    sparse, lexical = made.vector[LEXICAL], built.vector[LEXICAL]
    assert isinstance(sparse, EdgeSparseVector) and isinstance(lexical, models.SparseVector)
    assert (sparse.indices, sparse.values) == (lexical.indices, lexical.values)
