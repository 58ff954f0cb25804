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
  travel in May?") is still found through the session that speaks of the trip;
- entity heat (the entity heatmap, `domain/entity_heatmap.py`): a leaf gets a bonus for each
  entity the query names that it mentions, weighted by how rare the entity is among the
  user's leaves, so the leaf that joins them (Melanie *and* her kids) ranks above the many
  that name one, and a speaker named in most leaves adds next to nothing;
- session spread, for a question gathering facts (`Query.aggregative`): past the first
  `spread_per_session` leaves of a session, each loses `spread_penalty` times its place
  past them, so what is kept
  reaches across the sessions where the facts were said, not the nearest few of one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from memstream.domain.entity_heatmap import weighted_heat
from memstream.domain.query import Query
from memstream.domain.ranking import RecalledMemory
from memstream.domain.recall_options import RecallOptions

# A time range also covers the day before its start: "on 9 November" in a question is often
# the day a session is dated, and a session's messages start late in the evening.
_TIME_SLACK_BEFORE = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class EntityHeat:
    """What the heat bonus reads of the entity index for one query: the weight (rarity) of
    each entity the query names, and those each candidate leaf mentions (a leaf not listed
    mentions none)."""

    weights: Mapping[str, float] = field(default_factory=dict)
    leaf_keys: Mapping[str, Collection[str]] = field(default_factory=dict)


def rerank(
    query: Query,
    pool: Sequence[RecalledMemory],
    options: RecallOptions,
    parent_terms: Mapping[str, frozenset[str]] | None = None,
    entities: EntityHeat | None = None,
) -> list[RecalledMemory]:
    """The pool with each bonus added to the fused score, best first. `parent_terms` maps
    the pool's parent ids to the terms of their summaries' text (`lexical.term_set`: the
    summary signal reads them; none, no signal); `entities` what the heat bonus reads (none,
    no bonus)."""
    scores = {m.node.id: m.score for m in pool}
    signal = options.summary_signal
    for node_id, bonus in _summary_bonus(query, pool, parent_terms or {}, signal):
        scores[node_id] += bonus
    for node_id, bonus in _speaker_bonus(query, pool, options.speaker_boost):
        scores[node_id] += bonus
    for node_id, bonus in _session_bonus(pool, options.session_support):
        scores[node_id] += bonus
    for node_id, bonus in _time_bonus(query, pool, options):
        scores[node_id] += bonus
    for node_id, bonus in _heat_bonus(pool, entities, options.entity_heat):
        scores[node_id] += bonus
    ranked = sorted(pool, key=lambda m: (-scores[m.node.id], m.node.id))
    if query.aggregative:
        for node_id, penalty in _spread_penalty(ranked, options):
            scores[node_id] -= penalty
        ranked = sorted(pool, key=lambda m: (-scores[m.node.id], m.node.id))
    return [RecalledMemory(m.node, scores[m.node.id]) for m in ranked]


def _heat_bonus(
    pool: Sequence[RecalledMemory], entities: EntityHeat | None, weight: float
) -> list[tuple[str, float]]:
    if not weight or entities is None or not entities.weights:
        return []
    found = []
    for m in pool:
        hot = weighted_heat(entities.leaf_keys.get(m.node.id, ()), entities.weights)
        if hot > 0:
            found.append((m.node.id, weight * hot))
    return found


def _spread_penalty(
    ranked: Sequence[RecalledMemory], options: RecallOptions
) -> list[tuple[str, float]]:
    """The leaves past the first `spread_per_session` of their session, in rank order: the
    penalty grows with each further leaf, so a session's next leaf waits for the others'."""
    if not options.spread_penalty:
        return []
    cap = options.spread_per_session
    seen: dict[str, int] = defaultdict(int)
    found = []
    for m in ranked:
        # A leaf of a session still open has no parent yet: its day stands for the session.
        session = m.node.parent_id or m.node.t_start.date().isoformat()
        seen[session] += 1
        if seen[session] > cap:
            found.append((m.node.id, options.spread_penalty * (seen[session] - cap)))
    return found


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
    parent_terms: Mapping[str, frozenset[str]],
    weight: float,
) -> list[tuple[str, float]]:
    if not weight or not parent_terms:
        return []
    terms = query.terms_without(s for m in pool for s in m.node.speakers)
    if not terms:
        return []
    share = {pid: len(terms & held) / len(terms) for pid, held in parent_terms.items()}
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
