"""The translation of the builder's qdrant-client models into qdrant-edge objects."""

from __future__ import annotations

import pytest
from qdrant_client import models

from memstream.adapters.qdrant.edge_translation import edge_filter, edge_request
from memstream.adapters.qdrant.query import leaf_query, user_filter
from memstream.domain.models import Level, SparseVector


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
