"""The leaf re-ranking bonuses, one at a time, on hand-made candidates."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from memstream.domain.lexical import term_set
from memstream.domain.models import Level, MemoryNode
from memstream.domain.query import parse_query
from memstream.domain.ranking import RecalledMemory
from memstream.domain.recall_options import RecallOptions
from memstream.domain.rerank import EntityHeat, rerank

T0 = datetime(2023, 5, 1, 12, 0, tzinfo=UTC)
NOW = datetime(2023, 8, 1, tzinfo=UTC)
# Every bonus off; each test switches on the one it is about.
NONE = RecallOptions(
    speaker_boost=0,
    time_boost=0,
    session_support=0,
    summary_signal=0,
    entity_heat=0,
    spread_penalty=0,
)


def leaf(
    node_id: str, score: float, speaker: str, session: str = "s1", days: int = 0
) -> RecalledMemory:
    at = T0 + timedelta(days=days)
    node = MemoryNode(
        id=node_id,
        user_id="u",
        level=Level.SEGMENT,
        t_start=at,
        t_end=at,
        text=f"{speaker} said something",
        parent_id=session,
        speakers=(speaker,),
    )
    return RecalledMemory(node, score)


def ids(ranked: list[RecalledMemory]) -> list[str]:
    return [m.node.id for m in ranked]


def test_without_bonuses_the_fused_score_decides() -> None:
    pool = [leaf("a", 0.5, "Ann"), leaf("b", 0.7, "Bob")]
    assert ids(rerank(parse_query("What did Ann do?", NOW), pool, NONE)) == ["b", "a"]


def test_speaker_bonus_goes_to_the_one_person_named() -> None:
    pool = [leaf("a", 0.5, "Ann"), leaf("b", 0.6, "Bob")]
    e = replace(NONE, speaker_boost=0.2)
    ranked = rerank(parse_query("What did Ann paint?", NOW), pool, e)
    assert ids(ranked) == ["a", "b"]
    assert ranked[0].score == 0.7
    # Two people named, or nobody: no bonus.
    assert ids(rerank(parse_query("Did Ann and Bob meet?", NOW), pool, e)) == ["b", "a"]
    assert ids(rerank(parse_query("Who painted?", NOW), pool, e)) == ["b", "a"]


def test_speaker_bonus_is_skipped_when_every_candidate_has_the_speaker() -> None:
    both = [leaf("a", 0.5, "Ann"), leaf("b", 0.6, "Ann")]
    ranked = rerank(parse_query("What did Ann paint?", NOW), both, replace(NONE, speaker_boost=0.2))
    assert [m.score for m in ranked] == [0.6, 0.5]


def test_session_support_lifts_leaves_of_a_session_that_matches_as_a_whole() -> None:
    pool = [
        leaf("lone", 0.6, "Ann", session="s1"),
        leaf("x", 0.55, "Ann", session="s2"),
        leaf("y", 0.5, "Ann", session="s2"),
        leaf("z", 0.5, "Ann", session="s2"),
    ]
    ranked = rerank(parse_query("anything", NOW), pool, replace(NONE, session_support=0.1))
    assert ids(ranked)[0] == "x"  # 0.55 + 0.1 * (0.5 + 0.5)
    assert ranked[-1].node.id == "lone"  # alone in its session: no support


def test_time_bonus_for_memories_inside_the_named_range_or_just_after() -> None:
    pool = [
        leaf("before", 0.6, "Ann", days=-20),
        leaf("inside", 0.5, "Ann", days=3),
        leaf("told-later", 0.45, "Ann", days=32),
        leaf("long-after", 0.55, "Ann", days=60),
    ]
    e = replace(NONE, time_boost=0.2, time_pad_days=3)
    ranked = rerank(parse_query("What did Ann do in May 2023?", NOW), pool, e)
    assert ids(ranked) == ["inside", "told-later", "before", "long-after"]


def session(node_id: str, text: str) -> MemoryNode:
    return MemoryNode(id=node_id, user_id="u", level=Level.SESSION, t_start=T0, t_end=T0, text=text)


def test_summary_signal_lifts_the_leaves_of_a_session_about_the_query() -> None:
    trip = leaf("a", 0.50, "Caroline", session="s-trip")
    other = leaf("b", 0.51, "Caroline", session="s-work")
    parents = {
        s.id: term_set(s.text)
        for s in (
            session("s-trip", 'Session: Caroline: "We drove to the coast for camping."'),
            session("s-work", 'Session: Caroline: "The new job starts in June."'),
        )
    }
    on = replace(NONE, summary_signal=0.03)
    query = "Where did Caroline go camping?"
    assert ids(rerank(parse_query(query, NOW), [trip, other], on, parents)) == ["a", "b"]
    # The name every summary holds is no evidence; without parents or weight, no signal.
    assert ids(rerank(parse_query("What did Caroline say?", NOW), [trip, other], on, parents)) == [
        "b",
        "a",
    ]
    assert ids(rerank(parse_query(query, NOW), [trip, other], on)) == ["b", "a"]
    assert ids(rerank(parse_query(query, NOW), [trip, other], NONE, parents)) == ["b", "a"]


def test_heat_lifts_a_leaf_naming_several_of_the_query_entities_the_rare_ones_most() -> None:
    pool = [leaf("one", 0.6, "Ann"), leaf("both", 0.5, "Ann"), leaf("none", 0.55, "Bob")]
    named = {"one": {"ann"}, "both": {"ann", "kids"}}
    query = parse_query("What do Ann's kids like?", NOW)
    heat = replace(NONE, entity_heat=0.2)
    # Ann speaks in most leaves (weight 0.1); her kids are named in few (0.9).
    ranked = rerank(query, pool, heat, entities=EntityHeat({"ann": 0.1, "kids": 0.9}, named))
    assert ids(ranked) == ["both", "one", "none"]
    assert [round(m.score, 6) for m in ranked] == [0.7, 0.62, 0.55]
    # A query naming the common entity alone barely moves anything.
    alone = rerank(query, pool, heat, entities=EntityHeat({"ann": 0.1}, named))
    assert ids(alone) == ["one", "none", "both"]
    # Without the entity index, no bonus.
    assert ids(rerank(query, pool, heat)) == ["one", "none", "both"]


def test_a_question_gathering_facts_spreads_its_leaves_across_sessions() -> None:
    pool = [
        leaf("a1", 0.9, "Ann", session="a"),
        leaf("a2", 0.85, "Ann", session="a"),
        leaf("a3", 0.8, "Ann", session="a"),
        leaf("b1", 0.7, "Ann", session="b"),
        leaf("c1", 0.55, "Ann", session="c"),
    ]
    spread = replace(NONE, spread_per_session=1, spread_penalty=0.25)
    gathering = parse_query("What activities does Ann do?", NOW)
    assert gathering.aggregative
    assert ids(rerank(gathering, pool, spread)) == ["a1", "b1", "a2", "c1", "a3"]
    # A question after one fact keeps the nearest, whatever their session.
    single = parse_query("What did Ann paint?", NOW)
    assert ids(rerank(single, pool, spread)) == ["a1", "a2", "a3", "b1", "c1"]
