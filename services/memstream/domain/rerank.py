"""Leaf re-ranking: bonuses added to the fused score from what the memories already carry.

No LLM is needed for any of them:

- speaker: the query names exactly one person among the candidates' speakers, and some
  candidates are not theirs: the memories where that person speaks get a bonus (a question
  about Caroline is answered by what Caroline said);
- time: a time expression in the query is resolved to a range (TSM's semantic time) and
  the memories inside it, or told a few days after it, get a bonus;
- session support (off by default; the evaluation found no gain): each leaf gets a share of
  the summed score of the other candidates under the same L2 session;
- summary signal: a leaf whose session summary (its parent) holds the query's terms gets a
  bonus in proportion to the share of them it holds. The summary says what the session was
  about, so a message that answers in its own words ("we went to Paris" to "Where did they
  travel in May?") is still found through the session that speaks of the trip.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from memstream.domain.lexical import term_set
from memstream.domain.models import MemoryNode
from memstream.domain.query import Query
from memstream.domain.ranking import RecalledMemory
from memstream.domain.recall_options import RecallOptions

# A time range also covers the day before its start: "on 9 November" in a question is often
# the day a session is dated, and a session's messages start late in the evening.
_TIME_SLACK_BEFORE = timedelta(days=1)


def rerank(
    query: Query,
    pool: Sequence[RecalledMemory],
    options: RecallOptions,
    parents: Mapping[str, MemoryNode] | None = None,
) -> list[RecalledMemory]:
    """The pool with each bonus added to the fused score, best first. `parents` maps the
    pool's parent ids to their nodes (the summary signal reads them; none, no signal)."""
    scores = {m.node.id: m.score for m in pool}
    for node_id, bonus in _summary_bonus(query, pool, parents or {}, options.summary_signal):
        scores[node_id] += bonus
    for node_id, bonus in _speaker_bonus(query, pool, options.speaker_boost):
        scores[node_id] += bonus
    for node_id, bonus in _session_bonus(pool, options.session_support):
        scores[node_id] += bonus
    for node_id, bonus in _time_bonus(query, pool, options):
        scores[node_id] += bonus
    ranked = sorted(pool, key=lambda m: (-scores[m.node.id], m.node.id))
    return [RecalledMemory(m.node, scores[m.node.id]) for m in ranked]


def _speaker_bonus(
    query: Query, pool: Sequence[RecalledMemory], boost: float
) -> list[tuple[str, float]]:
    if not boost:
        return []
    named = query.people_named(s for m in pool for s in m.node.speakers)
    if len(named) != 1:
        return []
    theirs = [m.node.id for m in pool if named[0] in m.node.speakers]
    # When every candidate is theirs the bonus would change nothing but the scale.
    return [(i, boost) for i in theirs] if len(theirs) < len(pool) else []


def _summary_bonus(
    query: Query,
    pool: Sequence[RecalledMemory],
    parents: Mapping[str, MemoryNode],
    weight: float,
) -> list[tuple[str, float]]:
    if not weight or not parents:
        return []
    terms = query.terms_without(s for m in pool for s in m.node.speakers)
    if not terms:
        return []
    share = {
        pid: len(terms & term_set(parent.text)) / len(terms) for pid, parent in parents.items()
    }
    return [
        (m.node.id, weight * share[m.node.parent_id])
        for m in pool
        if m.node.parent_id is not None and share.get(m.node.parent_id)
    ]


def _session_bonus(pool: Sequence[RecalledMemory], share: float) -> list[tuple[str, float]]:
    if not share:
        return []
    by_session: dict[str, float] = defaultdict(float)
    for m in pool:
        if m.node.parent_id is not None:
            by_session[m.node.parent_id] += m.score
    return [
        (m.node.id, share * (by_session[m.node.parent_id] - m.score))
        for m in pool
        if m.node.parent_id is not None
    ]


def _time_bonus(
    query: Query, pool: Sequence[RecalledMemory], options: RecallOptions
) -> list[tuple[str, float]]:
    if not options.time_boost:
        return []
    span = query.time_range
    if span is None:
        return []
    start = _shifted(span.start, -_TIME_SLACK_BEFORE)
    end = _shifted(span.end, timedelta(days=options.time_pad_days))
    return [
        (m.node.id, options.time_boost)
        for m in pool
        if m.node.t_start < end and m.node.t_end >= start
    ]


def _shifted(instant: datetime, delta: timedelta) -> datetime:
    """`instant + delta`, held at the first or last representable instant instead of
    overflowing (a range named at the ends of the calendar)."""
    try:
        return instant + delta
    except OverflowError:
        edge = datetime.max if delta > timedelta(0) else datetime.min
        return edge.replace(tzinfo=instant.tzinfo or UTC)
