"""A user's knowledge as a reader holds it, and the same derived again after a change, only
where the change touches.

A reader that derived a user's facts and entities at one revision need not derive them whole
at the next: a write changes a few L1s' contributions (`domain.knowledge`), and the rest of
what it derived still holds. A view keeps the contributions by L1 beside what they make, so
`replaced` takes only the L1s a change names and derives again only what they touch: the
fact timelines of the slots their facts were or are in, the entity index's per-key surfaces
of their keys. A view stepped forward is equal, field by field, to the view derived afresh
from the contributions after the change (`tests/unit/domain/test_knowledge_view.py` and the
knowledge stores' contract check it over random histories). Pure, standard library only.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from memstream.domain.entity_index import Entity, EntityIndex, LeafEntities, Surface, clustered
from memstream.domain.entity_keys import KeySurfaces, added_to, key_surfaces, newest_first
from memstream.domain.fact_endings import ending_slot, reach
from memstream.domain.fact_subjects import as_speakers
from memstream.domain.fact_timeline import Timeline, timeline_of, timelines_of
from memstream.domain.facts import ENDED, SPEAKER_PREFIX, AtomicFact

Slot = tuple[str, str, str]  # (user, subject, attribute)


@dataclass(frozen=True, slots=True)
class FactsView:
    """Every L1's facts as extracted, by L1 (none empty), and the timelines they make, each
    fact keyed as its subject's speaker where it is one (`fact_subjects.as_speakers`)."""

    leaves: Mapping[str, tuple[AtomicFact, ...]]
    slot_leaves: Mapping[Slot, frozenset[str]]  # the L1s stating a fact of each slot
    timelines: Mapping[Slot, Timeline]
    speaker_facts: Mapping[str, int]  # by speaker key, how many facts as extracted have it

    @classmethod
    def of(cls, leaves: Mapping[str, tuple[AtomicFact, ...]]) -> FactsView:
        """The view derived whole from these L1s' facts."""
        kept = {leaf_id: facts for leaf_id, facts in leaves.items() if facts}
        counts = _speaker_counts(fact for facts in kept.values() for fact in facts)
        speakers = frozenset(counts)
        keyed = {leaf_id: as_speakers(facts, speakers) for leaf_id, facts in kept.items()}
        holders: dict[Slot, set[str]] = {}
        for leaf_id, facts in keyed.items():
            for fact in facts:
                holders.setdefault(fact.slot, set()).add(leaf_id)
        timelines = timelines_of(fact for facts in keyed.values() for fact in facts)
        slot_leaves = {slot: frozenset(ids) for slot, ids in holders.items()}
        return cls(kept, slot_leaves, timelines, counts)

    @property
    def observations(self) -> tuple[AtomicFact, ...]:
        """Every fact as said, by L1 id then as the L1 states them (one order whatever the
        order the store returned the L1s in)."""
        return tuple(fact for leaf_id in sorted(self.leaves) for fact in self.leaves[leaf_id])

    def replaced(self, changed: Mapping[str, tuple[AtomicFact, ...]]) -> FactsView:
        """The view with these L1s' facts replaced; an empty tuple: the L1 states none now
        (or is gone)."""
        counts = dict(self.speaker_facts)
        for leaf_id, facts in changed.items():
            _count(counts, self.leaves.get(leaf_id, ()), -1)
            _count(counts, facts, +1)
        speakers = frozenset(counts)
        if speakers != frozenset(self.speaker_facts):
            # A speaker came or went: the names keyed as one change with it, in any L1.
            leaves = {i: f for i, f in self.leaves.items() if i not in changed}
            return FactsView.of(leaves | {i: f for i, f in changed.items() if f})
        leaves = dict(self.leaves)
        slot_leaves = dict(self.slot_leaves)
        timelines = dict(self.timelines)
        touched: set[Slot] = set()
        endings: list[AtomicFact] = []  # said or unsaid by the change
        for leaf_id, facts in changed.items():
            for fact in as_speakers(leaves.pop(leaf_id, ()), speakers):
                touched.add(fact.slot)
                slot_leaves[fact.slot] = slot_leaves[fact.slot] - {leaf_id}
                if fact.attribute == ENDED:
                    endings.append(fact)
            if facts:
                leaves[leaf_id] = facts
                for fact in as_speakers(facts, speakers):
                    touched.add(fact.slot)
                    slot_leaves[fact.slot] = slot_leaves.get(fact.slot, frozenset()) | {leaf_id}
                    if fact.attribute == ENDED:
                        endings.append(fact)
        for slot in [s for s in touched if not slot_leaves[s]]:
            del slot_leaves[slot]
            timelines.pop(slot, None)
            touched.discard(slot)

        # Each L1's facts keyed as speakers once a step, however many slots read them.
        keyed: dict[str, tuple[AtomicFact, ...]] = {}

        def said(slot: Slot) -> list[AtomicFact]:
            found = []
            for i in slot_leaves.get(slot, ()):
                if i not in keyed:
                    keyed[i] = as_speakers(leaves[i], speakers)
                found += [f for f in keyed[i] if f.slot == slot]
            return found

        # An ending told without its attribute closes the slots of its subject whose values
        # it names (`fact_endings`): a slot is derived with its subject's endings, and an
        # ending said or unsaid derives again only the slots it names, not the subject's.
        if endings:
            subjects = {f.slot[:2] for f in endings}
            theirs = [s for s in slot_leaves if s[:2] in subjects and s[2] != ENDED]
            touched |= reach(endings, (f for slot in theirs for f in said(slot)))
        for slot in touched:
            if slot[2] == ENDED:
                continue
            ended = said(ending_slot(slot))
            derived = timelines_of([*said(slot), *ended]) if ended else None
            if derived is None:
                timelines[slot] = timeline_of(said(slot))
            elif slot in derived:
                timelines[slot] = derived[slot]
        return FactsView(leaves, slot_leaves, timelines, counts)


def _speaker_counts(facts: Iterable[AtomicFact]) -> dict[str, int]:
    counts: dict[str, int] = {}
    _count(counts, facts, +1)
    return counts


def _count(counts: dict[str, int], facts: Iterable[AtomicFact], step: int) -> None:
    """`counts` moved by `step` for each fact about a speaker; a key at zero is dropped."""
    for fact in facts:
        if not fact.subject.startswith(SPEAKER_PREFIX):
            continue
        left = counts.get(fact.subject, 0) + step
        if left:
            counts[fact.subject] = left
        else:
            counts.pop(fact.subject, None)


@dataclass(frozen=True, slots=True)
class EntitiesView:
    """Every L1's entity surfaces (those naming none left out), grouped by key and counted as
    the entity index counts them, and the index."""

    said: Mapping[str, Mapping[str, Surface]]  # entity key -> L1 id -> its surface
    counted: Mapping[str, KeySurfaces]  # entity key -> its surfaces summed, when any counts
    index: EntityIndex

    @classmethod
    def of(cls, leaves: Mapping[str, LeafEntities]) -> EntitiesView:
        """The view derived whole from these L1s' surfaces."""
        kept = {leaf_id: leaf for leaf_id, leaf in leaves.items() if leaf.surfaces}
        said: dict[str, dict[str, Surface]] = {}
        for leaf_id, leaf in kept.items():
            for surface in leaf.surfaces:
                said.setdefault(surface.key, {})[leaf_id] = surface
        summed = {key: key_surfaces(by_leaf) for key, by_leaf in said.items()}
        counted = {key: value for key, value in summed.items() if value is not None}
        return cls(said, counted, clustered(kept, counted))

    def replaced(self, changed: Mapping[str, LeafEntities | None]) -> EntitiesView:
        """The view with these L1s' surfaces replaced; None: the L1 is gone. Only the keys
        they said before or say now are counted again, and only the entities of those keys
        derived again; a key only added to is added to (`entity_keys.added_to`). The merging
        itself runs over every key, not every surface."""
        leaves = dict(self.index.leaves)
        gone: dict[str, set[str]] = {}  # key -> L1s no longer saying it
        said_now: dict[str, dict[str, Surface]] = {}  # key -> L1 -> surface said now
        for leaf_id, leaf in changed.items():
            before = leaves.pop(leaf_id, None)
            for surface in before.surfaces if before is not None else ():
                gone.setdefault(surface.key, set()).add(leaf_id)
            if leaf is not None and leaf.surfaces:
                leaves[leaf_id] = leaf
                for surface in leaf.surfaces:
                    said_now.setdefault(surface.key, {})[leaf_id] = surface
        said, counted = dict(self.said), dict(self.counted)
        touched = gone.keys() | said_now.keys()
        for key in touched:
            by_leaf = dict(said.get(key, {}))
            for leaf_id in gone.get(key, ()):
                del by_leaf[leaf_id]
            added = said_now.get(key, {})
            by_leaf.update(added)
            held = counted.get(key)
            summed = None
            if held is not None and key not in gone:
                summed = added_to(held, added)
            if summed is None:
                summed = key_surfaces(by_leaf)
            if by_leaf:
                said[key] = by_leaf
            else:
                said.pop(key, None)
            if summed is not None:
                counted[key] = summed
            else:
                counted.pop(key, None)
        before_entities = self.index.entities

        def unchanged(members: Sequence[str]) -> Entity | None:
            entity = before_entities.get(members[0])
            if entity is None or touched & set(members):
                return None
            return entity if (entity.key, *entity.aliases) == tuple(members) else None

        def ordered(members: Sequence[str]) -> tuple[str, ...] | None:
            entity = before_entities.get(members[0])
            if entity is None or (entity.key, *entity.aliases) != tuple(members):
                return None
            return _stepped_order(entity, self.counted, counted, gone.keys(), said_now)

        return EntitiesView(said, counted, clustered(leaves, counted, unchanged, ordered))


def _stepped_order(
    entity: Entity,
    counted_before: Mapping[str, KeySurfaces],
    counted: Mapping[str, KeySurfaces],
    gone: Collection[str],
    said_now: Mapping[str, Mapping[str, Surface]],
) -> tuple[str, ...] | None:
    """An entity of several keys' leaves newest first after a step that only added leaves
    to its keys, all said after its newest: those in front of the order it had. None when the
    step did anything else (a leaf of the entity changed or gone, weak surfaces brought in or
    left out, a late leaf): the entity is ordered again from its leaves."""
    members = (entity.key, *entity.aliases)
    if any(k in gone or k not in counted_before or k not in counted for k in members):
        return None
    newest = max(counted_before[k].last for k in members)
    said_at: dict[str, datetime] = {}
    for key in members:
        before, after = counted_before[key], counted[key]
        added = {i: s for i, s in said_now.get(key, {}).items() if _holds(after.leaves, i)}
        if len(after.leaves) != len(before.leaves) + len(added):
            return None
        for leaf_id, surface in added.items():
            if surface.last <= newest:
                return None
            said_at[leaf_id] = max(surface.last, said_at.get(leaf_id, surface.last))
    return newest_first(said_at) + entity.recent


def _holds(sorted_ids: Sequence[str], leaf_id: str) -> bool:
    at = bisect.bisect_left(sorted_ids, leaf_id)
    return at < len(sorted_ids) and sorted_ids[at] == leaf_id
