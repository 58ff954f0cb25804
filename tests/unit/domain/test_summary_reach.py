"""Reading only the session summaries that can change which leaves are kept keeps them.

`summary_reach` names the leaves whose summary may move them into the first `keep`; the
pipeline reads only their sessions. Over random pools (many sessions, scores close together,
every bonus on, summaries holding none, some or all of the query's terms), the first `keep`
of `rerank` with only those summaries are the same leaves, in the same order, with the same
scores, as with every summary; and a pool spread over many sessions needs fewer of them.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from memstream.domain.models import Level, MemoryNode
from memstream.domain.query import parse_query
from memstream.domain.ranking import RecalledMemory
from memstream.domain.recall_options import RecallOptions
from memstream.domain.rerank import EntityHeat, rerank, summary_reach

T0 = datetime(2023, 5, 1, 12, 0, tzinfo=UTC)
NOW = datetime(2023, 8, 1, tzinfo=UTC)
WORDS = ("pottery", "harbor", "hiking", "guitar", "garden", "lunch", "paris", "kayak")
QUESTIONS = (
    "What did Ann say about pottery and the harbor?",
    "When did Bob go hiking in June 2023?",
    "What does Ann like about the garden?",
    "pottery harbor guitar",
    "What books has Ann read?",  # gathers facts: a wider keep
)


def _pool(rnd: random.Random, leaves: int, sessions: int) -> list[RecalledMemory]:
    pool = []
    for i in range(leaves):
        at = T0 + timedelta(days=rnd.randrange(60))
        node = MemoryNode(
            id=f"l{i:03d}",
            user_id="u",
            level=Level.SEGMENT,
            t_start=at,
            t_end=at,
            text=" ".join(rnd.sample(WORDS, 3)),
            parent_id=f"s{rnd.randrange(sessions):03d}",
            speakers=(rnd.choice(("Ann", "Bob")),),
        )
        # Scores close together, some equal: the bound must hold at the edge of the keep.
        pool.append(RecalledMemory(node, round(rnd.uniform(0.4, 0.5), 3)))
    return pool


def _summaries(rnd: random.Random, sessions: int) -> dict[str, MemoryNode]:
    return {
        f"s{n:03d}": MemoryNode(
            id=f"s{n:03d}",
            user_id="u",
            level=Level.SESSION,
            t_start=T0,
            t_end=T0,
            text=" ".join(rnd.sample(WORDS, rnd.randrange(len(WORDS)))),
        )
        for n in range(sessions)
    }


def test_the_leaves_kept_do_not_change_when_only_the_reachable_summaries_are_read() -> None:
    rnd = random.Random(37)
    options = RecallOptions(summary_signal=0.03, session_support=0.01, leaf_top_k=10)
    saved = 0
    for _ in range(200):
        sessions = rnd.choice((3, 30, 90))
        pool = _pool(rnd, rnd.choice((8, 40, 100)), sessions)
        summaries = _summaries(rnd, sessions)
        query = parse_query(rnd.choice(QUESTIONS), NOW)
        keep = options.leaves_for(query.aggregative)
        heat = EntityHeat({"ann": 0.4}, {m.node.id: {"ann"} for m in pool[::3]})
        every = rerank(query, pool, options, summaries, heat)
        reach = summary_reach(query, pool, options, keep, heat)
        read = {m.node.parent_id for m in pool if m.node.id in reach}
        some = rerank(query, pool, options, {s: summaries[s] for s in read if s}, heat)
        assert some[:keep] == every[:keep]
        saved += len(summaries) - len(read)
    assert saved > 0  # the bound leaves summaries unread


def test_a_spread_penalty_reads_every_summary() -> None:
    rnd = random.Random(5)
    options = RecallOptions(spread_penalty=0.01, leaf_top_k=5)
    pool = _pool(rnd, 40, 20)
    query = parse_query("What books has Ann read?", NOW)
    assert query.aggregative
    reach = summary_reach(query, pool, options, options.leaves_for(True))
    assert reach == {m.node.id for m in pool}
