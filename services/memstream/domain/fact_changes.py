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

from memstream.domain.fact_endings import ending_slot, reach
from memstream.domain.fact_heads import Slot, SlotHead, heads_of, step_head
from memstream.domain.fact_timeline import Timeline, chain_order, change, timelines_of
from memstream.domain.facts import ENDED, AtomicFact
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
    every slot it touches or `only` those. An ending told without its attribute that the
    commit says or drops touches the slots of its subject whose values it names
    (`fact_endings.reach`); every slot is derived with its subject's endings, so `stored`
    holds them (`ports.LeafFacts.slot_facts`)."""
    replaced = set(change_.dropped) | set(change_.leaves)
    incoming = [f for knowledge in change_.leaves.values() for f in knowledge.facts]
    outgoing = [f for leaf_id in replaced for f in stored.get(leaf_id, ())]
    slots = {f.slot for f in incoming} | {f.slot for f in outgoing}
    if only is not None:
        slots &= set(only)
    if not slots:
        return FactChanges()
    kept = [f for leaf_id, facts in stored.items() if leaf_id not in replaced for f in facts]
    said_before = [f for facts in stored.values() for f in facts]
    said_after = [*kept, *incoming]
    endings = [f for f in (*incoming, *outgoing) if f.slot in slots and f.attribute == ENDED]
    slots |= reach(endings, (*said_before, *said_after))
    derived = slots | {ending_slot(slot) for slot in slots}
    before = timelines_of(_in(derived, said_before))
    after = timelines_of(_in(derived, said_after))
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
    heads = heads_of(after, sorted(s for s in slots if s[2] != ENDED))
    heads |= _ending_heads(derived, said_after)
    return FactChanges(tuple(written), tuple(removed), tuple(superseded), tuple(reopened), heads)


def facts_needed(
    slots: Iterable[tuple[str, str]], said: Iterable[tuple[str, str]]
) -> tuple[set[tuple[str, str]], set[str]]:
    """What a commit that states facts of `slots` (subject, attribute) and says again or
    drops L1s that stated `said` needs to derive what it changes: the facts of those slots
    and of their subjects' endings told without an attribute (any may close one), and every
    fact of a subject whose such ending it states or drops (it may close any of them)."""
    wanted = {*slots, *said}
    whole = {subject for subject, attribute in wanted if attribute == ENDED}
    wanted |= {(subject, ENDED) for subject, _ in wanted}
    return wanted, whole


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
    # An ending said now may close any slot of its subject: they are all derived.
    ending = {slot[:2] for slot in incoming if slot[2] == ENDED}
    written: list[AtomicFact] = []
    superseded: list[AtomicFact] = []
    stepped: dict[Slot, SlotHead | None] = {}
    left: set[Slot] = set()
    for slot in sorted(incoming):
        head = heads.get(slot)
        step = None
        if slot[:2] not in ending and not _before_ending(heads, slot, incoming[slot]):
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


def _before_ending(heads: Mapping[Slot, SlotHead], slot: Slot, facts: Iterable[AtomicFact]) -> bool:
    """Whether a stored ending of the slot's subject comes after one of `facts` (a late
    statement): it may close what they state, which no head knows."""
    latest = heads.get(ending_slot(slot))
    if latest is None:
        return False
    last = (latest.last.valid_from, latest.last.recorded_at)
    return any((f.valid_from, f.recorded_at) <= last for f in facts)


def _ending_heads(
    slots: Iterable[Slot], facts: Iterable[AtomicFact]
) -> dict[Slot, SlotHead | None]:
    """The head of each `ENDED` slot among `slots`: its latest ending (None: it has none),
    which tells a later commit whether a statement of the subject may come before one."""
    latest: dict[Slot, AtomicFact] = {}
    for fact in facts:
        if fact.attribute == ENDED:
            held = latest.get(fact.slot)
            if held is None or chain_order(fact) > chain_order(held):
                latest[fact.slot] = fact
    return {
        slot: SlotHead(latest[slot], ()) if slot in latest else None
        for slot in slots
        if slot[2] == ENDED
    }


def _in(slots: set[Slot], facts: Iterable[AtomicFact]) -> list[AtomicFact]:
    return [f for f in facts if f.slot in slots]
