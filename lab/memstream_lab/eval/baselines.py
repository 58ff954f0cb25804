"""Flat baselines over a conversation's raw messages: dense, BM25 and hybrid, in numpy.

Each message is one document, "Speaker: text", so a baseline pays for exactly what it
returns. The three scorers:

- dense: cosine of the query and message embeddings (the vectors are unit length);
- BM25: exact Okapi BM25 over the conversation's messages, k1 = 1.2, b = 0.75, IDF
  ln(1 + (N - df + 0.5) / (df + 0.5)) from this conversation only, average length from this
  conversation, memstream's tokenizer (`domain.lexical.tokenize`), each distinct query term
  counted once (as memstream's lexical channel does);
- hybrid: `0.9 * dense + 0.1 * s / (s + 5)` with s the BM25 score: the same saturation, half
  score and weights as memstream's fused leaf score (adapters/qdrant_index.py), so the
  baseline differs from memstream's leaf activation only in what it indexes.

A method returns either its `top_k` best messages or, as a point of the token curve
(curve.py), its best messages until the next would pass `max_tokens`. A returned message is
dated as memstream dates a leaf ("8 May 2023, Speaker: text", `domain/segment_text.py`), and
the date is paid for in its tokens (and, within a budget, in room). What is searched stays the
undated document: the date changes no ranking.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import numpy as np
import numpy.typing as npt

from memstream.adapters.qdrant.server import LEXICAL_HALF_SCORE
from memstream.domain.calendar import spelled_day
from memstream.domain.lexical import BM25_B, BM25_K1, tokenize

FlatKind = Literal["dense", "bm25", "hybrid"]
FLAT_KINDS: tuple[FlatKind, ...] = ("dense", "bm25", "hybrid")
FLAT_TOP_K: tuple[int, ...] = (10, 20, 50)
HYBRID_DENSE_WEIGHT = 0.9

Vector = npt.NDArray[np.float32]


class Bm25:
    """Okapi BM25 over a fixed corpus; each term's per-document weight is precomputed."""

    def __init__(
        self, documents: Sequence[Sequence[str]], *, k1: float = BM25_K1, b: float = BM25_B
    ) -> None:
        self.size = len(documents)
        lengths = [len(d) for d in documents]
        avg = (sum(lengths) / self.size) if self.size else 0.0
        postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for index, terms in enumerate(documents):
            for term, tf in Counter(terms).items():
                postings[term].append((index, tf))
        self._weights: dict[str, tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]] = {}
        for term, hits in postings.items():
            idf = math.log(1 + (self.size - len(hits) + 0.5) / (len(hits) + 0.5))
            rows = np.array([i for i, _ in hits], dtype=np.intp)
            tfs = np.array([tf for _, tf in hits], dtype=np.float64)
            norm = k1 * (1 - b + b * np.array([lengths[i] for i in rows]) / (avg or 1.0))
            self._weights[term] = (rows, idf * tfs * (k1 + 1) / (tfs + norm))

    def scores(self, query_terms: Sequence[str]) -> npt.NDArray[np.float64]:
        """BM25 score of every document for the distinct query terms."""
        total = np.zeros(self.size, dtype=np.float64)
        for term in dict.fromkeys(query_terms):
            found = self._weights.get(term)
            if found is not None:
                rows, weights = found
                total[rows] += weights
        return total


def dated_message(at: datetime, document: str) -> str:
    """A returned message as the reader gets it: dated like a leaf (`render_segment`)."""
    return f"{spelled_day(at)}, {document}"


@dataclass(frozen=True)
class FlatMethod:
    """A scorer and how much it returns: its `top_k` best messages, or its best messages
    within `max_tokens` (exactly one of the two)."""

    kind: FlatKind
    top_k: int | None = None
    max_tokens: int | None = None
    # The curve budget at which memstream spent `max_tokens` on average: this point compares
    # with memstream at the same tokens, not at the same ceiling (curve.py).
    matching: int | None = None

    def __post_init__(self) -> None:
        if (self.top_k is None) == (self.max_tokens is None):
            raise ValueError("a flat method takes either top_k or max_tokens")
        if (self.top_k or 0) < 0 or (self.max_tokens or 0) < 0:
            raise ValueError("top_k and max_tokens must not be negative")

    @property
    def name(self) -> str:
        if self.top_k is not None:
            return f"flat-{self.kind}@{self.top_k}"
        return f"flat-{self.kind}@{self.max_tokens}tok"

    def take(self, ranked: Sequence[int], costs: Sequence[int]) -> list[int]:
        """The rows this method returns from `ranked` (best first), each costing `costs[row]`
        tokens: the first `top_k`, or, within `max_tokens`, every row that still fits in rank
        order (one too long for what is left is skipped, as memstream's `fit_tokens` does)."""
        if self.top_k is not None:
            return list(ranked[: self.top_k])
        budget = self.max_tokens or 0
        kept: list[int] = []
        spent = 0
        for row in ranked:
            if spent + costs[row] <= budget:
                kept.append(row)
                spent += costs[row]
        return kept


def matched_methods(spent: Mapping[int, int]) -> list[FlatMethod]:
    """Every kind filled to the tokens memstream spent at each curve budget."""
    return [
        FlatMethod(kind, max_tokens=tokens, matching=budget)
        for kind in FLAT_KINDS
        for budget, tokens in spent.items()
        if tokens > 0
    ]


def flat_methods(budgets: Sequence[int] = ()) -> list[FlatMethod]:
    """Every kind at each top-k, then every kind filled to each token budget."""
    fixed = [FlatMethod(kind, top_k=k) for kind in FLAT_KINDS for k in FLAT_TOP_K]
    filled = [FlatMethod(kind, max_tokens=b) for kind in FLAT_KINDS for b in budgets]
    return fixed + filled


class FlatIndex:
    """One conversation's messages with their embeddings and BM25 statistics."""

    def __init__(self, ids: Sequence[str], texts: Sequence[str], embeddings: Vector) -> None:
        if not (len(ids) == len(texts) == embeddings.shape[0]):
            raise ValueError("ids, texts and embeddings must have the same length")
        self.ids = list(ids)
        self.texts = list(texts)
        self._embeddings = embeddings
        self._bm25 = Bm25([tokenize(t) for t in texts])

    def scores(self, kind: FlatKind, query: str, query_vector: Vector) -> npt.NDArray[np.float64]:
        if kind == "bm25":
            return self._bm25.scores(tokenize(query))
        dense = (self._embeddings @ query_vector).astype(np.float64)
        if kind == "dense":
            return dense
        lexical = self._bm25.scores(tokenize(query))
        saturated = lexical / (lexical + LEXICAL_HALF_SCORE)
        return HYBRID_DENSE_WEIGHT * dense + (1 - HYBRID_DENSE_WEIGHT) * saturated

    def search(
        self,
        method: FlatMethod,
        query: str,
        query_vector: Vector,
        costs: Sequence[int] | None = None,
    ) -> list[int]:
        """Row numbers of what `method` returns, best first (ties: earlier message); `costs`
        (each row's tokens as returned) is needed by a method filled to `max_tokens`."""
        if method.max_tokens is not None and costs is None:
            raise ValueError(f"{method.name} needs the returned messages' token costs")
        scores = self.scores(method.kind, query, query_vector)
        order = np.argsort(-scores, kind="stable")
        if method.top_k is not None:
            order = order[: method.top_k]
        return method.take([int(i) for i in order], costs or ())
