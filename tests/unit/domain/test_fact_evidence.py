"""A returned fact's telling goes on past the gate when what it kept shows only a stale value."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from memstream.domain.fact_evidence import with_fact_evidence
from memstream.domain.fact_timeline import history, timeline_of
from memstream.domain.facts import AtomicFact, make_fact, speaker_key
from memstream.domain.models import Level, MemoryNode
from memstream.domain.ranking import RecalledMemory

JANUARY = datetime(2025, 1, 10, tzinfo=UTC)
JUNE = datetime(2025, 6, 2, tzinfo=UTC)
NOW = datetime(2025, 9, 1, tzinfo=UTC)


def rosas(attribute: str, value: str, text: str, when: datetime, *sources: str) -> AtomicFact:
    return make_fact(
        user_id="rosa",
        subject=speaker_key("Rosa"),
        subject_name="Rosa",
        attribute=attribute,
        value=value,
        text=text,
        valid_from=when,
        recorded_at=when,
        source_ids=sources,
    )


def lives_in(city: str, when: datetime, *sources: str) -> AtomicFact:
    return rosas("lives_in", city, f"Rosa lives in {city}", when, *sources)


VERSIONS = history(
    timeline_of([lives_in("Lyon", JANUARY, "m-lyon"), lives_in("Montreal", JUNE, "m-moved")])
)
LYON_FACT, MONTREAL = VERSIONS


def leaf(
    node_id: str, *sources: str, level: Level = Level.SEGMENT, when: datetime = JUNE
) -> RecalledMemory:
    node = MemoryNode(
        id=node_id,
        user_id="rosa",
        level=level,
        t_start=when,
        t_end=when,
        text=f"memory {node_id}",
        source_ids=sources,
    )
    return RecalledMemory(node, 0.5)


LYON = leaf("l-lyon", "m-lyon", when=JANUARY)  # stale now: Montreal replaced it
TRIP = leaf("l-trip", "m-trip")  # states nothing on where she lives
MOVED = leaf("l-moved", "m-moved")
SETTLED = leaf("l-settled", "m-settled", when=datetime(2025, 7, 1, tzinfo=UTC))
SUMMARY = leaf("s-june", "m-moved", level=Level.SESSION)


def ids(memories: list[RecalledMemory]) -> list[str]:
    return [m.node.id for m in memories]


def told(
    kept: list[RecalledMemory], candidates: list[RecalledMemory], fact: AtomicFact = MONTREAL
) -> list[str]:
    return ids(with_fact_evidence(kept, candidates, [fact], VERSIONS, NOW))


def test_beside_a_stale_memory_the_leaf_a_returned_fact_was_read_from_joins() -> None:
    assert LYON_FACT.valid_to == JUNE and MONTREAL.valid_to is None
    assert told([LYON], [LYON, MOVED, SUMMARY]) == ["l-lyon", "l-moved"]


def test_beside_memories_that_do_not_go_stale_the_gate_decides_alone() -> None:
    assert told([TRIP], [TRIP, MOVED]) == ["l-trip"]


def test_a_memory_stale_on_the_facts_slot_counts_though_it_holds_on_another() -> None:
    # "I live in Lyon and work as a pharmacist": stale on where she lives, holding on her job.
    pharmacist = rosas("job", "pharmacist", "Rosa is a pharmacist", JANUARY, "m-lyon")
    both = (*VERSIONS, pharmacist)
    joined = with_fact_evidence([LYON], [LYON, MOVED], [MONTREAL, pharmacist], both, NOW)
    assert ids(joined) == ["l-lyon", "l-moved"]


def test_only_leaves_join_and_nothing_comes_twice() -> None:
    assert told([LYON], [LYON, SUMMARY]) == ["l-lyon"]
    twice = with_fact_evidence([LYON], [LYON, MOVED], [MONTREAL, MONTREAL], VERSIONS, NOW)
    assert ids(twice) == ["l-lyon", "l-moved"]


def test_of_several_tellings_the_newest_joins_and_none_when_one_was_kept() -> None:
    restated = dataclasses.replace(MONTREAL, source_ids=("m-moved", "m-settled"))
    assert told([LYON], [LYON, MOVED, SETTLED], restated) == ["l-lyon", "l-settled"]
    assert told([LYON, MOVED], [LYON, MOVED, SETTLED], restated) == ["l-lyon", "l-moved"]


def test_a_leaf_holding_no_source_of_the_facts_stays_out() -> None:
    other = dataclasses.replace(MONTREAL, source_ids=("m-elsewhere",))
    assert told([LYON], [LYON, MOVED], other) == ["l-lyon"]
