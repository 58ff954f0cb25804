"""A slot's head steps forward as a derivation from every statement would: what lets a
restatement read its slot's head instead of its history."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from memstream.domain.fact_changes import FactChanges, fact_changes, stepped_changes
from memstream.domain.fact_heads import head_of
from memstream.domain.fact_timeline import SOURCES_KEPT, kept_sources, timeline_of
from memstream.domain.facts import AtomicFact, make_fact
from memstream.domain.knowledge import KnowledgeChange, LeafKnowledge

START = datetime(2021, 1, 1, tzinfo=UTC)


def said(
    attribute: str, value: str, day: int, message: str, *, negated: bool = False
) -> AtomicFact:
    when = START + timedelta(days=day)
    return make_fact(
        user_id="ann",
        subject="speaker:ann",
        subject_name="Ann",
        attribute=attribute,
        value=value,
        text=f"Ann {attribute} {value}",
        valid_from=when,
        recorded_at=when,
        source_ids=(message,),
        negated=negated,
    )


def written(leaves: dict[str, tuple[AtomicFact, ...]]) -> KnowledgeChange:
    return KnowledgeChange(
        leaves={leaf: LeafKnowledge(facts) for leaf, facts in leaves.items()},
        first_written=frozenset(leaves),
    )


def by_id(changes: FactChanges) -> tuple[dict[str, AtomicFact], set[str]]:
    return {v.fact_id: v for v in changes.written}, {v.fact_id for v in changes.superseded}


def test_a_restated_value_is_one_version_with_a_count_and_the_latest_sources() -> None:
    statements = [said("job", "nurse", day, f"m{day}") for day in range(20)]
    [version] = timeline_of(statements).versions
    assert version.statements == 20 and version.fact_id == statements[0].fact_id
    assert version.source_ids == tuple(f"m{day}" for day in range(20 - SOURCES_KEPT, 20))
    assert version.recorded_at == START


def test_kept_sources_depend_only_on_what_was_kept() -> None:
    every = [f"m{i % 11}" for i in range(40)]
    for cut in range(len(every)):
        older = kept_sources((), every[:cut])
        assert kept_sources(older, every[cut:]) == kept_sources((), every)


@pytest.mark.parametrize("attribute", ["job", "likes"])  # one chain; a chain per value
@pytest.mark.parametrize("seed", range(12))
def test_stepping_a_head_gives_what_deriving_every_statement_gives(
    attribute: str, seed: int
) -> None:
    rng = random.Random(seed)
    values = ["nurse", "teacher", "painter"]
    stored: dict[str, tuple[AtomicFact, ...]] = {}
    day = 0
    stepped = 0
    for step in range(40):
        day += rng.choice([2, 2, 3])
        leaves = {
            f"l{step}-{i}": (said(attribute, rng.choice(values), day + i, f"m{step}-{i}"),)
            for i in range(rng.choice([1, 1, 2]))
        }
        if rng.random() < 0.1:  # an ending, which a head leaves to the derivation
            leaf = f"l{step}-end"
            leaves[leaf] = (said(attribute, rng.choice(values), day, f"m{step}-e", negated=True),)
        change = written(leaves)
        whole = fact_changes(stored, change)
        slot = ("ann", "speaker:ann", attribute)
        heads = {slot: h for slot, h in whole.heads.items() if h is not None}
        before = timeline_of(f for facts in stored.values() for f in facts)
        held = {slot: h} if (h := head_of(before)) is not None else {}
        quick, left = stepped_changes(held, change)
        if left:
            assert left == {slot}
        else:
            stepped += 1
            assert by_id(quick) == by_id(whole)
            assert quick.heads == heads
        stored.update(change_leaves(change))
    assert stepped >= 20  # the case this is for: most steps restate or state anew


def change_leaves(change: KnowledgeChange) -> dict[str, tuple[AtomicFact, ...]]:
    return {leaf: k.facts for leaf, k in change.leaves.items()}


def test_a_statement_in_the_past_of_the_slot_is_left_to_the_derivation() -> None:
    stored = [said("job", "nurse", day, f"m{day}") for day in (1, 5)]
    head = head_of(timeline_of(stored))
    assert head is not None
    late = written({"late": (said("job", "teacher", 3, "late"),)})
    _, left = stepped_changes({head.last.slot: head}, late)
    assert left == {head.last.slot}
