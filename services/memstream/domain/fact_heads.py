"""A slot's head: what a restatement needs of a slot's timeline, kept beside its statements.

A fact restated in every session would otherwise make every restatement read the slot's
whole history to find what changes. The head of a slot is its last statement (in the
timeline's order) and the last version of each of its chains (the one chain of a
single-valued attribute, one per value of a many-valued one): a statement that comes after
every other one either restates the tail of its chain (the version merges it), starts a
value (a new version, closing the tail of a single-valued chain) or is a case this module
leaves to the derivation from every statement (an ending, an ending replaced at once).
Stepping a head gives the versions and the head a derivation from every statement gives
(`tests/unit/domain/test_fact_heads.py` holds it). Pure, standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from memstream.domain.fact_timeline import Timeline, chain_order, chains, kept_sources
from memstream.domain.facts import AtomicFact, is_single_valued

Slot = tuple[str, str, str]  # (user, subject, attribute)


@dataclass(frozen=True, slots=True)
class SlotHead:
    """The last statement of a slot and the last version of each of its chains."""

    last: AtomicFact
    tails: tuple[AtomicFact, ...]


def head_of(timeline: Timeline) -> SlotHead | None:
    """The head of a derived timeline; None for one with no statement."""
    if not timeline.observations:
        return None
    tails = tuple(chain[-1] for chain in chains(timeline.observations) if chain)
    return SlotHead(timeline.observations[-1], tails)


@dataclass(frozen=True, slots=True)
class SlotStep:
    """A head stepped over newer statements: the versions written (new or changed) and
    which of them a newer one closed, in the order they changed, and the new head."""

    written: tuple[AtomicFact, ...]
    superseded: tuple[AtomicFact, ...]
    head: SlotHead


def step_head(head: SlotHead, newer: Iterable[AtomicFact]) -> SlotStep | None:
    """`head` with `newer` stated after it, or None when one of them is not a plain
    statement after every other one (an ending, a statement in the past of the slot's last,
    a tail that is an ending): the caller derives the slot from every statement then."""
    last = head.last
    tails = {_chain_key(v): v for v in head.tails}
    changed: dict[str, AtomicFact] = {}
    superseded: dict[str, AtomicFact] = {}
    for fact in sorted(newer, key=chain_order):
        if fact.negated or chain_order(fact) <= chain_order(last) or fact.slot != last.slot:
            return None
        key = _chain_key(fact)
        tail = tails.get(key)
        if tail is not None and tail.negated:
            return None
        if tail is not None and tail.value_key == fact.value_key:
            version = replace(
                tail,
                source_ids=kept_sources(tail.source_ids, fact.source_ids),
                recorded_at=min(tail.recorded_at, fact.recorded_at),
                certainty="stated" if fact.certainty == "stated" else tail.certainty,
                statements=tail.statements + 1,
            )
        else:
            version = replace(
                fact,
                source_ids=kept_sources((), fact.source_ids),
                valid_to=None,
                supersedes=tail.fact_id if tail is not None else None,
                superseded_by=None,
            )
            if tail is not None:
                closed = replace(tail, valid_to=fact.valid_from, superseded_by=fact.fact_id)
                changed[closed.fact_id] = closed
                superseded[closed.fact_id] = closed
        changed[version.fact_id] = version
        tails[key] = version
        last = fact
    return SlotStep(
        tuple(changed.values()),
        tuple(superseded.values()),
        SlotHead(last, tuple(tails.values())),
    )


def heads_of(
    timelines: Mapping[Slot, Timeline], slots: Iterable[Slot]
) -> dict[Slot, SlotHead | None]:
    """The head of each of `slots` (None: the slot has no statement left)."""
    return {slot: head_of(timelines[slot]) if slot in timelines else None for slot in slots}


def _chain_key(fact: AtomicFact) -> str:
    # A single-valued attribute is one chain; a many-valued one a chain per value.
    return "" if is_single_valued(fact.attribute) else fact.value_key
