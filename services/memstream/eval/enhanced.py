"""Recall improvements under evaluation, applied to the production RecallPipeline.

`EnhancedRecallPipeline` changes one stage, leaf activation: it fetches a deeper pool of
L1 candidates by the production fused score, adds the bonuses of `Enhancements`, and keeps
the best `leaf_top_k`. Everything after (ancestors, gate, token fit, order) is production
code. The bonuses, all computed without an LLM from what the memories already carry:

- speaker: the query names exactly one person among the candidates' speakers, and some
  candidates are not theirs: the memories where that person speaks get a bonus (a question
  about Caroline is answered by what Caroline said);
- session support: each leaf gets a share of the summed score of the other candidates
  under the same L2 session, so a session that matches the query as a whole lends weight
  to its leaves (the tree's support, pushed back down to the leaves);
- time: a time expression in the query is resolved to a range (TSM's semantic time) and
  the memories inside it, or told a few days after it, get a bonus.

The pure scoring is `rerank`; moving it into recall/ means calling it from `_activate`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from memstream.adapters.ports import Embedder, VectorIndex
from memstream.adapters.sparse import query_vector
from memstream.bootstrap import Runtime
from memstream.domain.models import Level
from memstream.eval.cues import named_people
from memstream.eval.timeexpr import resolve_time_range
from memstream.eval.variants import Enhancements, Variant
from memstream.recall.pipeline import RecallPipeline, RecallRequest
from memstream.recall.ranking import RecalledMemory

# A time range also covers the day before its start: "on 9 November" in a question is often
# the day a session is dated, and a session's messages start late in the evening.
_TIME_SLACK_BEFORE = timedelta(days=1)


def rerank(
    query: str, query_time: datetime, pool: Sequence[RecalledMemory], e: Enhancements
) -> list[RecalledMemory]:
    """The pool with each idea's bonus added to the fused score, best first."""
    scores = {m.node.id: m.score for m in pool}
    if e.speaker_boost:
        speakers = [s for m in pool for s in m.node.speakers]
        named = named_people(query, speakers)
        theirs = [m for m in pool if named and named[0] in m.node.speakers]
        if len(named) == 1 and 0 < len(theirs) < len(pool):
            for m in theirs:
                scores[m.node.id] += e.speaker_boost
    if e.session_support:
        by_session: dict[str, float] = defaultdict(float)
        for m in pool:
            if m.node.parent_id is not None:
                by_session[m.node.parent_id] += m.score
        for m in pool:
            if m.node.parent_id is not None:
                others = by_session[m.node.parent_id] - m.score
                scores[m.node.id] += e.session_support * others
    if e.time_boost:
        span = resolve_time_range(query, query_time)
        if span is not None:
            start = span.start - _TIME_SLACK_BEFORE
            end = span.end + timedelta(days=e.time_pad_days)
            for m in pool:
                if m.node.t_start < end and m.node.t_end >= start:
                    scores[m.node.id] += e.time_boost
    ranked = sorted(pool, key=lambda m: (-scores[m.node.id], m.node.id))
    return [RecalledMemory(m.node, scores[m.node.id]) for m in ranked]


class EnhancedRecallPipeline(RecallPipeline):
    """The production pipeline with leaf activation re-ranked by `Enhancements`."""

    def __init__(self, *, enhancements: Enhancements, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.enhancements = enhancements

    async def _activate(self, request: RecallRequest, clock: Any) -> list[RecalledMemory]:
        [dense] = await clock.time("embed", self._embedder.embed([request.query]))
        hits = await clock.time(
            "search",
            self._index.search_leaves(
                request.user_id,
                dense,
                query_vector(request.query),
                limit=max(self.enhancements.pool, self.options.leaf_top_k),
                dense_weight=self.options.dense_weight,
                level=Level.SEGMENT,
            ),
        )
        scores = {hit.id: hit.score for hit in hits}
        nodes = await self._tree.get_many(request.user_id, list(scores))
        pool = [
            RecalledMemory(n, scores[n.id])
            for n in nodes
            if n.user_id == request.user_id and n.level == Level.SEGMENT
        ]
        when = request.query_time or datetime.now(UTC)
        return rerank(request.query, when, pool, self.enhancements)[: self.options.leaf_top_k]


def build_pipeline(
    runtime: Runtime, variant: Variant, *, embedder: Embedder, index: VectorIndex
) -> RecallPipeline:
    common: dict[str, Any] = {
        "tree": runtime.tree,
        "index": index,
        "embedder": embedder,
        "llm": runtime.llm,
        "settings": runtime.settings,
        "options": variant.options,
    }
    if variant.enhancements.reranks:
        return EnhancedRecallPipeline(enhancements=variant.enhancements, **common)
    return RecallPipeline(**common)
