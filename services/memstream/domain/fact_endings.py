"""Endings told without their attribute, resolved against what was stated before them.

"I've left the Magpies", "Ellie quit keto", "we stopped going to the climbing gym", "sold the
Vespa": the sentence says something ended, not which attribute (team, diet, gym, vehicle).
Extraction reads such a sentence as an observation of the pseudo-attribute `ENDED` naming
what ended (a function of the message alone, so replays and rebuilds read the same). Here,
wherever timelines are derived from observations, each such ending is resolved: in every slot
of the same user and subject whose value held just before it (stated before it, not ended
since) and whose words the ending names, it becomes a negated observation of that value at
the ending's time, so the version it names is closed (`valid_to` = the ending's event time,
`superseded_by` = the ending) with no successor value. An ending that names no value held
then closes nothing and is dropped; no slot of `ENDED` is kept. Forgetting the ending's
message removes the observation, and the derivation re-opens what it had closed. Pure,
standard library only.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from memstream.domain.fact_extraction import fact_sentence
from memstream.domain.fact_values import names
from memstream.domain.facts import ENDED, AtomicFact, fact_id, is_single_valued

_Order = tuple[datetime, datetime]
Slot = tuple[str, str, str]  # (user, subject, attribute)


def with_endings(facts: Iterable[AtomicFact]) -> list[AtomicFact]:
    """The observations with each `ENDED` one replaced by the negations it resolves to."""
    said = list(facts)
    endings = [f for f in said if f.attribute == ENDED]
    if not endings:
        return said
    kept = [f for f in said if f.attribute != ENDED]
    subjects = {(f.user_id, f.subject) for f in endings}
    slots: dict[Slot, list[AtomicFact]] = {}
    for fact in kept:
        if (fact.user_id, fact.subject) in subjects:
            slots.setdefault(fact.slot, []).append(fact)
    # Each slot ordered once, whatever the number of endings of its subject.
    ordered = {slot: _Ordered.of(observations) for slot, observations in slots.items()}
    for ending in endings:
        for slot in sorted(slots):
            if slot[:2] != (ending.user_id, ending.subject):
                continue
            for value in ordered[slot].held_named(ending):
                kept.append(closing(ending, slot[2], value))
    return kept


def ending_slot(slot: Slot) -> Slot:
    """The slot of the endings that may close `slot`: its subject's `ENDED`."""
    return (slot[0], slot[1], ENDED)


def reach(endings: Iterable[AtomicFact], facts: Iterable[AtomicFact]) -> set[Slot]:
    """The slots of `facts` an ending of `endings` may close: of its subject, with a value it
    names. Only they are derived again when those endings are said or forgotten; a slot
    whose values no ending names derives the same with or without it."""
    named: dict[tuple[str, str], set[str]] = {}
    for ending in endings:
        if ending.attribute == ENDED:
            named.setdefault((ending.user_id, ending.subject), set()).add(ending.value)
    reached: set[Slot] = set()
    checked: set[tuple[Slot, str]] = set()
    for fact in facts:
        said = named.get((fact.user_id, fact.subject))
        if not said or fact.attribute == ENDED or fact.slot in reached:
            continue
        if (fact.slot, fact.value) in checked:
            continue
        checked.add((fact.slot, fact.value))
        if any(names(value, fact.value) for value in said):
            reached.add(fact.slot)
    return reached


def held_named(observations: Sequence[AtomicFact], ending: AtomicFact) -> list[str]:
    """The values of one slot that held just before `ending` and that it names."""
    return _Ordered.of(observations).held_named(ending)


@dataclass(frozen=True, slots=True)
class _Ordered:
    """One slot's observations in order, and the values they state."""

    facts: tuple[AtomicFact, ...]
    orders: tuple[_Order, ...]
    values: frozenset[str]

    @classmethod
    def of(cls, observations: Iterable[AtomicFact]) -> _Ordered:
        facts = tuple(sorted(observations, key=lambda f: (_order(f), f.fact_id)))
        return cls(facts, tuple(map(_order, facts)), frozenset(f.value for f in facts))

    def held_named(self, ending: AtomicFact) -> list[str]:
        named = {value for value in self.values if names(ending.value, value)}
        if not named:
            return []
        before = bisect_left(self.orders, _order(ending))
        if not before:
            return []
        if is_single_valued(self.facts[0].attribute):
            last = self.facts[before - 1]
            return [last.value] if not last.negated and last.value in named else []
        # Each value's last statement before the ending, latest first, until every value
        # named has been met.
        wanted = {f.value_key for f in self.facts if f.value in named}
        held: set[str] = set()
        seen: set[str] = set()
        for fact in reversed(self.facts[:before]):
            if fact.value_key in seen:
                continue
            seen.add(fact.value_key)
            if not fact.negated and fact.value in named:
                held.add(fact.value)
            if wanted <= seen:
                break
        return sorted(held)


def closing(ending: AtomicFact, attribute: str, value: str) -> AtomicFact:
    """The negation of `value` in `attribute` that `ending` stands for (inferred: the
    attribute was read from what was stated before, not said)."""
    return replace(
        ending,
        fact_id=fact_id(ending.user_id, ending.subject, attribute, value, True, ending.source_ids),
        attribute=attribute,
        value=value,
        text=fact_sentence(ending.subject_name, attribute, value, True),
        negated=True,
        certainty="implied",
    )


def _order(fact: AtomicFact) -> _Order:
    return (fact.valid_from, fact.recorded_at)
