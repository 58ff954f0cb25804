"""What both Qdrant adapters send: the collection layout, a node's point, the fused leaf query.

Built once here as qdrant-client models, the shapes a Qdrant server receives: `QdrantIndex`
sends them as they are, `EdgeIndex` translates them one to one into qdrant-edge objects. So the
embedded stack runs the queries production runs.

Each point is one memory node (point id = node id), with a named dense vector ("dense",
cosine) and a named sparse vector ("lexical", BM25 term-frequency weights; Qdrant applies
IDF through `Modifier.IDF`, over the whole collection).

The payload carries the node whole, so the tree could be derived again from the index alone.
Only five of its values stand on their own: the user, level and times that filters and
payload indexes use, and the text, for whoever reads points. The rest of the node (its
sources, session, version, verbatim messages, facts, derivation, ...) is one JSON text under
`node`, read back by `node_from_payload`; no query reads it (the tree store serves it).
qdrant-edge converts a payload value by value in the worker's event loop, at a cost per
value whatever its length, so a payload of many small values (an L1 had 16 and a derivation
object) made converting it most of the loop's work for a point. Points written before, with
every field on its own, are read all the same.

Leaf search fuses both channels inside Qdrant in one query: a dense and a lexical prefetch,
each filtered on the user, rescored by a formula

    fused = w * dense + (1 - w) * lexical / (lexical + LEXICAL_HALF_SCORE)

Raw BM25 scores are unbounded, so they are squashed into [0, 1) by saturation rather than
by max-normalisation over the candidate set, for three reasons: it is a per-point
expression, so Qdrant evaluates it (no second round trip, no client-side fusion); it is
absolute, so a candidate set whose best match is one common word does not get a full 1.0
lexical score; and a score means the same thing from one query to the next. A point found
by only one prefetch scores 0 in the other channel. A query without content words has no
lexical prefetch, and its score is the dense term alone.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from qdrant_client import models

from memstream.contracts.codec import (
    decode_derivation,
    decode_facts,
    decode_source_message,
    encode_facts,
    encode_source_message,
)
from memstream.domain.models import IndexedMemory, Level, MemoryNode, SparseVector

DENSE = "dense"
LEXICAL = "lexical"
# The IDF-weighted BM25 score of about one match on a moderately rare term (IDF ~5 once a
# collection holds thousands of memories): one such match gives a lexical score near 0.5,
# several matches approach 1.
LEXICAL_HALF_SCORE = 5.0
# Each channel brings this many candidates per requested result (at least MIN_PREFETCH),
# so a point ranked low by one channel can still be lifted by the other.
PREFETCH_FACTOR = 3
MIN_PREFETCH = 50
# Every query filters on one user: as a tenant index, Qdrant reads only that user's points.
PAYLOAD_INDEXES: dict[str, models.PayloadSchemaType | models.KeywordIndexParams] = {
    "user_id": models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
    "level": models.PayloadSchemaType.INTEGER,
    "t_end": models.PayloadSchemaType.FLOAT,
}
# The payload key of the node's other fields (all but the user, level, times and text), as
# one JSON text.
NODE_FIELDS = "node"


class Retrieved(Protocol):
    """A point as either client retrieves it."""

    @property
    def id(self) -> object: ...

    @property
    def payload(self) -> Mapping[str, Any] | None: ...


def payloads_by_id(
    records: Iterable[Retrieved], user_id: str | None = None
) -> dict[str, dict[str, Any]]:
    """The retrieved points' payloads by id; with `user_id`, other users' points are dropped."""
    found = {str(r.id): dict(r.payload or {}) for r in records}
    if user_id is None:
        return found
    return {i: p for i, p in found.items() if p.get("user_id") == user_id}


def user_filter(user_id: str, level: Level | None = None) -> models.Filter:
    """Points of one user, of one level if given."""
    must: list[models.Condition] = [
        models.FieldCondition(key="user_id", match=models.MatchValue(value=user_id))
    ]
    if level is not None:
        must.append(models.FieldCondition(key="level", match=models.MatchValue(value=int(level))))
    return models.Filter(must=must)


def memory_point(
    memory: IndexedMemory, payload: dict[str, Any] | None = None
) -> models.PointStruct:
    """The point of a node: id = node id, both named vectors, the node's payload (or the one
    given: its words sealed, `sealing.sealed_payload`)."""
    return models.PointStruct(
        id=memory.node.id,
        vector={DENSE: list(memory.dense), LEXICAL: _sparse(memory.sparse)},
        payload=node_payload(memory.node) if payload is None else payload,
    )


def node_payload(node: MemoryNode) -> dict[str, Any]:
    """The payload stored with a node: what filters use and the text on their own (epoch
    seconds for range filters), the rest of the node as one JSON text."""
    return {
        "user_id": node.user_id,
        "level": int(node.level),
        "t_start": node.t_start.timestamp(),
        "t_end": node.t_end.timestamp(),
        "text": node.text,
        # Unescaped (ensure_ascii=False): whoever reads or searches the payload finds the words.
        NODE_FIELDS: json.dumps(
            {
                # ISO for people and the user's offset (epoch seconds lose it).
                "t_start_iso": node.t_start.isoformat(),
                "t_end_iso": node.t_end.isoformat(),
                "parent_id": node.parent_id,
                "source_ids": list(node.source_ids),
                "session_id": node.session_id,
                "speakers": list(node.speakers),
                "version": node.version,
                "degraded": node.degraded,
                "messages": [encode_source_message(m) for m in node.messages],
                "facts": encode_facts(node.facts),
                "derivation": node.derivation.to_json() if node.derivation else None,
                **({"tz": node.tz} if node.tz else {}),  # a repair keeps the window's zone
            },
            ensure_ascii=False,
        ),
    }


def node_from_payload(node_id: str, payload: dict[str, Any]) -> MemoryNode:
    """Rebuild a node from its payload; children live in Redis, so they come back empty."""
    packed = payload.get(NODE_FIELDS)
    if isinstance(packed, str):
        payload = {**payload, **json.loads(packed)}
    # else a point written before the rest was packed: every field on its own.
    return MemoryNode(
        id=node_id,
        user_id=payload["user_id"],
        level=Level(payload["level"]),
        t_start=_from_payload_time(payload, "t_start"),
        t_end=_from_payload_time(payload, "t_end"),
        text=payload["text"],
        parent_id=payload.get("parent_id"),
        source_ids=tuple(payload.get("source_ids") or ()),
        version=int(payload.get("version", 1)),
        degraded=bool(payload.get("degraded", False)),
        session_id=payload.get("session_id"),
        speakers=tuple(payload.get("speakers") or ()),
        messages=tuple(decode_source_message(m) for m in _json_list(payload.get("messages"))),
        facts=decode_facts(_json_list(payload.get("facts"))),
        derivation=decode_derivation(payload.get("derivation")),
        tz=payload.get("tz"),
    )


def _json_list(stored: str | list[Any] | None) -> list[Any]:
    # A list inside the packed fields, and in the first points; JSON text of its own in the
    # points written between.
    if isinstance(stored, str):
        decoded: list[Any] = json.loads(stored)
        return decoded
    return stored or []


def _from_payload_time(payload: dict[str, Any], key: str) -> datetime:
    # The ISO string keeps the original offset (the user's zone); epoch seconds are the backup.
    iso = payload.get(f"{key}_iso")
    if iso:
        return datetime.fromisoformat(iso)
    return datetime.fromtimestamp(float(payload[key]), tz=UTC)


def leaf_query(
    user_id: str,
    dense: Sequence[float],
    sparse: SparseVector,
    *,
    limit: int,
    dense_weight: float,
    level: Level,
    lexical_half_score: float,
    dense_among: Sequence[str] | None = None,
) -> models.QueryRequest:
    """The fused leaf search of one user and level (the formula in the module docstring);
    with `dense_among`, the dense prefetch scores only those ids: points of this user and
    level among which its best `prefetch_depth(limit)` are, so the answer is the same."""
    if not 0.0 <= dense_weight <= 1.0:
        raise ValueError("dense_weight must be in [0, 1]")
    flt = user_filter(user_id, level)
    depth = prefetch_depth(limit)
    dense_filter = flt
    if dense_among is not None:
        # The ids alone: they are this user's and level's points, and the engine then looks
        # at those points only instead of checking each of the user's against the list.
        dense_filter = models.Filter(must=[models.HasIdCondition(has_id=list(dense_among))])
    # The filter goes on each prefetch: the limits must apply to this user's candidates,
    # whatever the engine's filter propagation does. Not on top as well: the formula ranks
    # only what the prefetches found, all of which passed it, and checking them again was a
    # noticeable share of the search, for nothing.
    prefetch = [models.Prefetch(query=list(dense), using=DENSE, filter=dense_filter, limit=depth)]
    if sparse.indices:
        prefetch.append(
            models.Prefetch(query=_sparse(sparse), using=LEXICAL, filter=flt, limit=depth)
        )
    return models.QueryRequest(
        prefetch=prefetch,
        query=fused_formula(float(dense_weight), float(lexical_half_score), bool(sparse.indices)),
        limit=limit,
        with_payload=False,
        with_vector=False,
    )


@functools.lru_cache(maxsize=64)
def fused_formula(
    dense_weight: float, lexical_half_score: float, lexical: bool
) -> models.FormulaQuery:
    """The fusion formula (module docstring), shared by every query of the same weights:
    validating its expressions was most of the cost of building a leaf query. Shared, so
    not to be modified."""
    terms: list[models.Expression] = [models.MultExpression(mult=[dense_weight, "$score[0]"])]
    if lexical:
        saturated = models.DivExpression(
            div=models.DivParams(
                left="$score[1]",
                right=models.SumExpression(sum=["$score[1]", lexical_half_score]),
                by_zero_default=0.0,
            )
        )
        terms.append(models.MultExpression(mult=[1.0 - dense_weight, saturated]))
    return models.FormulaQuery(
        formula=models.SumExpression(sum=terms),
        # A point missing from one prefetch scores 0 there (explicit, so every engine agrees).
        defaults={"$score[0]": 0.0, "$score[1]": 0.0},
    )


def prefetch_depth(limit: int) -> int:
    """How many candidates each channel brings for `limit` results."""
    return max(limit * PREFETCH_FACTOR, MIN_PREFETCH)


def _sparse(vector: SparseVector) -> models.SparseVector:
    return models.SparseVector(indices=list(vector.indices), values=list(vector.values))
