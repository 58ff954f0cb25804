"""Lexical weights from `domain.lexical` as the sparse vectors Qdrant stores and queries."""

from __future__ import annotations

from memstream.domain.lexical import document_weights, query_weights
from memstream.domain.models import SparseVector
from memstream.domain.query import Query


def _to_sparse(weights: dict[int, float]) -> SparseVector:
    # Sorted indices: Qdrant sorts them anyway, and a canonical order makes vectors comparable.
    ordered = sorted(weights.items())
    return SparseVector(
        indices=tuple(i for i, _ in ordered), values=tuple(float(w) for _, w in ordered)
    )


def document_vector(text: str) -> SparseVector:
    """The sparse vector stored with a memory (BM25 term-frequency part; Qdrant adds IDF)."""
    return _to_sparse(document_weights(text))


def query_vector(query: Query) -> SparseVector:
    """The sparse vector of a recall query: one unit per distinct content term."""
    return _to_sparse(query_weights(query.terms))
