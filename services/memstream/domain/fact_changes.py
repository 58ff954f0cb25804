"""What a commit's knowledge changes in a user's fact versions, for the change feed.

The store keeps what each L1 said (its observations); the versions, their validity and
their links are derived from them (`fact_timeline`). A commit replaces what some L1s said
and drops others, so the versions of the slots they touch may change: new ones appear, one
that held is closed by a newer one (superseded), one a forgotten message had closed holds
again (re-opened), and some are gone. Only the touched slots are derived again, before and
after, and compared. Pure, standard library only.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from memstream.domain.fact_heads import Slot, SlotHead, heads_of, step_head
from memstream.domain.fact_timeline import Timeline, change, timelines_of
from memstream.domain.facts import AtomicFact
from memstream.domain.knowledge import KnowledgeChange


@dataclass(frozen=True, slots=True)
class Reopened:
    """A version closed before the commit that holds again after it."""

    version: AtomicFact
    was_superseded_by: str


@dataclass(frozen=True, slots=True)
class FactChanges:
    """The versions a commit writes (new or changed), removes, closes and re-opens, and the
    heads of the slots it touches as they will be (None: the slot is left empty)."""

    written: tuple[AtomicFact, ...] = ()
    removed: tuple[str, ...] = ()
    superseded: tuple[AtomicFact, ...] = ()  # newly closed by `superseded_by`
    reopened: tuple[Reopened, ...] = ()
    heads: Mapping[Slot, SlotHead | None] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.written and not self.removed


def touches_facts(change_: KnowledgeChange) -> bool:
    """Whether the commit may change any version: an L1 said facts, or one that may have
    said some is written again or dropped. A first write saying none changes nothing."""
    return bool(change_.dropped) or any(
        knowledge.facts or leaf_id not in change_.first_written
        for leaf_id, knowledge in change_.leaves.items()
    )


def fact_changes(
    stored: Mapping[str, tuple[AtomicFact, ...]],
    change_: KnowledgeChange,
    only: Collection[Slot] | None = None,
) -> FactChanges:
    """The version changes of applying `change_` to `stored` (observations by L1 id), in
    every slot it touches or `only` those."""
    replaced = set(change_.dropped) | set(change_.leaves)
    incoming = [f for knowledge in change_.leaves.values() for f in knowledge.facts]
    slots = {f.slot for f in incoming}
    slots |= {f.slot for leaf_id in replaced for f in stored.get(leaf_id, ())}
    if only is not None:
        slots &= set(only)
    if not slots:
        return FactChanges()
    kept = [f for leaf_id, facts in stored.items() if leaf_id not in replaced for f in facts]
    before = timelines_of(_in(slots, (f for facts in stored.values() for f in facts)))
    after = timelines_of(_in(slots, [*kept, *incoming]))
    written: list[AtomicFact] = []
    removed: list[str] = []
    superseded: list[AtomicFact] = []
    reopened: list[Reopened] = []
    for slot in sorted(slots):
        old, new = before.get(slot), after.get(slot)
        diff = change(old or Timeline(), new or Timeline())
        written += diff.upserts
        removed += diff.deletes
        was = {v.fact_id: v for v in old.versions} if old else {}
        for version in diff.upserts:
            prior = was.get(version.fact_id)
            closed_before = prior.superseded_by if prior else None
            if version.superseded_by and version.superseded_by != closed_before:
                superseded.append(version)
            elif closed_before and not version.superseded_by:
                reopened.append(Reopened(version, closed_before))
    heads = heads_of(after, sorted(slots))
    return FactChanges(tuple(written), tuple(removed), tuple(superseded), tuple(reopened), heads)


def restated(change_: KnowledgeChange) -> bool:
    """Whether the commit only writes L1s for the first time: nothing stored is said again,
    so their facts can step the touched slots' heads forward (`stepped_changes`)."""
    return not change_.dropped and all(i in change_.first_written for i in change_.leaves)


def stepped_changes(
    heads: Mapping[Slot, SlotHead], change_: KnowledgeChange
) -> tuple[FactChanges, frozenset[Slot]]:
    """For a commit that only writes new L1s (`restated`): the version changes of the slots
    their heads can step forward, and the slots left to derive from their statements (no
    head, or a statement a head cannot take: `fact_heads.step_head`)."""
    incoming: dict[Slot, list[AtomicFact]] = {}
    for knowledge in change_.leaves.values():
        for fact in knowledge.facts:
            incoming.setdefault(fact.slot, []).append(fact)
    written: list[AtomicFact] = []
    superseded: list[AtomicFact] = []
    stepped: dict[Slot, SlotHead | None] = {}
    left: set[Slot] = set()
    for slot in sorted(incoming):
        head = heads.get(slot)
        step = step_head(head, incoming[slot]) if head is not None else None
        if step is None:
            left.add(slot)
            continue
        written += step.written
        superseded += step.superseded
        stepped[slot] = step.head
    return FactChanges(tuple(written), (), tuple(superseded), (), stepped), frozenset(left)


def joined(first: FactChanges, second: FactChanges) -> FactChanges:
    """The changes of two disjoint sets of slots, as one commit's."""
    return FactChanges(
        first.written + second.written,
        first.removed + second.removed,
        first.superseded + second.superseded,
        first.reopened + second.reopened,
        {**first.heads, **second.heads},
    )


def _in(slots: set[Slot], facts: Iterable[AtomicFact]) -> list[AtomicFact]:
    return [f for f in facts if f.slot in slots]
