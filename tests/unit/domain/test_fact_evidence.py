"""A returned fact's telling goes on past the gate when nothing kept tells it."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from memstream.domain.fact_evidence import with_fact_evidence
from memstream.domain.facts import make_fact, speaker_key
from memstream.domain.models import Level, MemoryNode
from memstream.domain.ranking import RecalledMemory

JUNE = datetime(2025, 6, 2, tzinfo=UTC)


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


MONTREAL = make_fact(
    user_id="rosa",
    subject=speaker_key("Rosa"),
    subject_name="Rosa",
    attribute="lives_in",
    value="Montreal",
    text="Rosa lives in Montreal",
    valid_from=JUNE,
    recorded_at=JUNE,
    source_ids=("m-moved", "m-settled"),
)
LYON = leaf("l-lyon", "m-lyon")
MOVED = leaf("l-moved", "m-moved")
SETTLED = leaf("l-settled", "m-settled", when=datetime(2025, 7, 1, tzinfo=UTC))
SUMMARY = leaf("s-june", "m-moved", level=Level.SESSION)


def ids(memories: list[RecalledMemory]) -> list[str]:
    return [m.node.id for m in memories]


def test_a_leaf_the_gate_left_out_joins_when_a_returned_fact_was_read_from_it() -> None:
    kept = with_fact_evidence([LYON], [LYON, MOVED, SUMMARY], [MONTREAL])
    assert ids(kept) == ["l-lyon", "l-moved"]


def test_only_leaves_join_and_nothing_comes_twice() -> None:
    assert ids(with_fact_evidence([LYON], [LYON, SUMMARY], [MONTREAL])) == ["l-lyon"]
    assert ids(with_fact_evidence([LYON], [LYON, MOVED], [MONTREAL, MONTREAL])) == [
        "l-lyon",
        "l-moved",
    ]


def test_of_several_tellings_the_newest_joins_and_none_when_one_was_kept() -> None:
    candidates = [LYON, MOVED, SETTLED]
    assert ids(with_fact_evidence([LYON], candidates, [MONTREAL])) == ["l-lyon", "l-settled"]
    assert ids(with_fact_evidence([LYON, MOVED], candidates, [MONTREAL])) == ["l-lyon", "l-moved"]


def test_without_facts_the_gate_decides_alone() -> None:
    assert ids(with_fact_evidence([LYON], [LYON, MOVED], [])) == ["l-lyon"]


def test_a_leaf_holding_no_source_of_the_facts_stays_out() -> None:
    other = dataclasses.replace(MONTREAL, source_ids=("m-elsewhere",))
    assert ids(with_fact_evidence([LYON], [LYON, MOVED], [other])) == ["l-lyon"]
