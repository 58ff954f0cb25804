"""What `query.py` builds as qdrant-client models, as the `qdrant-edge-py` objects EdgeIndex sends.

One to one, and only for the models and fields the builder uses: anything else raises
TypeError, so a builder change this module does not cover fails the index contract tests
instead of quietly changing what the edge engine computes. Points are the exception: one is
written per L1, so `edge_memory_point` builds it from the same parts `memory_point` uses.
"""

from __future__ import annotations

from pydantic import BaseModel
from qdrant_client import models
from qdrant_edge import (
    Expression,
    FieldCondition,
    Filter,
    Formula,
    HasIdCondition,
    KeywordIndexParams,
    MatchValue,
    PayloadSchemaType,
    Point,
    Prefetch,
    Query,
    QueryRequest,
    SparseVector,
)

from memstream.adapters.qdrant.query import DENSE, LEXICAL
from memstream.adapters.qdrant.sealing import sealed_payload
from memstream.domain.models import IndexedMemory


def edge_request(request: models.QueryRequest) -> QueryRequest:
    _check_fields(request, "prefetch", "query", "filter", "limit", "with_payload", "with_vector")
    query, prefetch = request.query, request.prefetch
    if not isinstance(query, models.FormulaQuery):
        raise _unsupported(query)
    if not isinstance(prefetch, list):
        raise _unsupported(prefetch)
    if request.limit is None:
        raise TypeError("a qdrant-edge query needs a limit")
    if not isinstance(request.with_payload, bool) or not isinstance(request.with_vector, bool):
        raise TypeError("qdrant-edge translation covers with_payload/with_vector as booleans")
    _check_fields(query, "formula", "defaults")
    # The leaf query puts one filter object on the top and on each prefetch: translated once.
    filters: dict[int, Filter] = {}
    return QueryRequest(
        limit=request.limit,
        prefetches=[_edge_prefetch(p, filters) for p in prefetch],
        query=_edge_formula(query),
        filter=_edge_filter_once(request.filter, filters),
        with_payload=request.with_payload,
        with_vector=request.with_vector,
    )


# Translated formulas by the id of the query object, which the entry holds (so the id is not
# reused while cached): `query.fused_formula` shares one object among the queries of the
# same weights, and translating its expressions was a third of translating a leaf query.
_FORMULAS: dict[int, tuple[models.FormulaQuery, Formula]] = {}
_FORMULAS_KEPT = 64


def _edge_formula(query: models.FormulaQuery) -> Formula:
    cached = _FORMULAS.get(id(query))
    if cached is not None and cached[0] is query:
        return cached[1]
    if len(_FORMULAS) >= _FORMULAS_KEPT:
        _FORMULAS.clear()
    formula = Formula(_edge_expression(query.formula), defaults=query.defaults)
    _FORMULAS[id(query)] = (query, formula)
    return formula


def _edge_filter_once(flt: models.Filter | None, done: dict[int, Filter]) -> Filter | None:
    """`edge_filter(flt)`, reusing what `done` holds for the same object (keyed by its id,
    valid while the request holding `flt` lives)."""
    if flt is None:
        return None
    translated = done.get(id(flt))
    if translated is None:
        translated = done[id(flt)] = edge_filter(flt)
    return translated


def edge_filter(flt: models.Filter) -> Filter:
    _check_fields(flt, "must")
    if not isinstance(flt.must, list):
        raise _unsupported(flt.must)
    return Filter(must=[_edge_condition(c) for c in flt.must])


def edge_memory_point(memory: IndexedMemory, key: bytes | None = None) -> Point:
    """The point `memory_point` builds, made straight from the memory: the one thing built
    here rather than translated. A point is written per L1 in the worker's event loop, where
    the qdrant-client model in between cost a fifth of the point (validation included); a
    test holds the two to the same id, vectors and payload. With `key`, its words sealed."""
    vectors: dict[str, list[float] | list[list[float]] | SparseVector] = {
        DENSE: list(memory.dense),
        LEXICAL: SparseVector(
            indices=list(memory.sparse.indices), values=list(memory.sparse.values)
        ),
    }
    return Point(memory.node.id, vectors, sealed_payload(memory.node, key))


def edge_index_schema(
    schema: models.PayloadSchemaType | models.KeywordIndexParams,
) -> PayloadSchemaType | KeywordIndexParams:
    if isinstance(schema, models.KeywordIndexParams):
        _check_fields(schema, "type", "is_tenant")
        return KeywordIndexParams(is_tenant=schema.is_tenant)
    schema_type: PayloadSchemaType = getattr(
        PayloadSchemaType, schema.name.title()
    )  # INTEGER -> Integer
    return schema_type


def _edge_prefetch(prefetch: models.Prefetch, filters: dict[int, Filter]) -> Prefetch:
    _check_fields(prefetch, "query", "using", "filter", "limit")
    if prefetch.limit is None:
        raise TypeError("a qdrant-edge prefetch needs a limit")
    return Prefetch(
        limit=prefetch.limit,
        query=Query.Nearest(_edge_vector(prefetch.query), using=prefetch.using),
        filter=_edge_filter_once(prefetch.filter, filters),
    )


def _edge_expression(expression: models.Expression) -> Expression:
    match expression:
        case float():
            return Expression.Constant(expression)
        case str():
            return Expression.Variable(expression)
        case models.SumExpression(sum=terms):
            return Expression.Sum([_edge_expression(e) for e in terms])
        case models.MultExpression(mult=factors):
            return Expression.Mult([_edge_expression(e) for e in factors])
        case models.DivExpression(div=div):
            return Expression.Div(
                _edge_expression(div.left),
                _edge_expression(div.right),
                by_zero_default=div.by_zero_default,
            )
    raise _unsupported(expression)


def _edge_condition(condition: models.Condition) -> FieldCondition | HasIdCondition:
    if isinstance(condition, models.HasIdCondition):
        _check_fields(condition, "has_id")
        return HasIdCondition(set(condition.has_id))
    if not isinstance(condition, models.FieldCondition):
        raise _unsupported(condition)
    _check_fields(condition, "key", "match")
    if not isinstance(condition.match, models.MatchValue):
        raise _unsupported(condition.match)
    return FieldCondition(key=condition.key, match=MatchValue(condition.match.value))


def _edge_vector(vector: object) -> list[float] | SparseVector:
    match vector:
        case models.SparseVector(indices=indices, values=values):
            return SparseVector(indices=indices, values=values)
        case list():
            return vector
    raise _unsupported(vector)


def _check_fields(model: BaseModel, *translated: str) -> None:
    ignored = model.model_fields_set - set(translated)
    if ignored:
        raise TypeError(f"no qdrant-edge translation of {type(model).__name__}.{sorted(ignored)}")


def _unsupported(value: object) -> TypeError:
    return TypeError(f"no qdrant-edge translation of {type(value).__name__}")
