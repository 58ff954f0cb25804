"""What each L1 says about the world, committed with it, and what the whole says on read.

An L1 leaf contributes the facts its messages state (`fact_extraction`) and the entity
surfaces it names (`entity_index.read_leaf`): its `LeafKnowledge`, a function of its
messages alone, so a replay derives the same value and the segmenter needs to read nothing
to write it. A store keeps these contributions by leaf id (the source of truth: the
timelines' observations, the entity index's leaves) and derives the rest on read: fact
versions with `fact_timeline`, entities with `entity_index.build`. Writing a leaf again
(a message forgotten, a rebuild) replaces its contribution and removing it drops it, so
forgetting a message removes its facts and re-opens what they had closed, and drops its
surfaces. A commit also carries the heads of the slots it touches (`fact_heads`), which a
store keeps beside the statements so a restatement need not read a slot's history. Pure,
standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memstream.domain.entities import name_key
from memstream.domain.entity_index import (
    Entity,
    EntityIndex,
    LeafEntities,
    build,
    read_leaf,
    resolve,
)
from memstream.domain.fact_extraction import extract_facts
from memstream.domain.fact_heads import Slot, SlotHead
from memstream.domain.fact_subjects import as_speakers
from memstream.domain.fact_timeline import Timeline, at, current, history, timelines_of
from memstream.domain.fact_vocabulary import PET_KINDS
from memstream.domain.facts import ENDED, SPEAKER_PREFIX, AtomicFact
from memstream.domain.models import Level, MemoryNode

_KIN_PREFIX = "kin:"


@dataclass(frozen=True, slots=True)
class LeafKnowledge:
    """What one L1 says: its facts as extracted (observations) and its entity surfaces."""

    facts: tuple[AtomicFact, ...] = ()
    entities: LeafEntities = field(default_factory=lambda: LeafEntities((), ()))

    @property
    def empty(self) -> bool:
        return not self.facts and not self.entities.surfaces and not self.entities.links


@dataclass(frozen=True, slots=True)
class KnowledgeChange:
    """The knowledge a commit writes, as one value: `leaves` replace what those L1s said
    before (an empty one clears it), `dropped` L1s no longer exist. Of `leaves`, those
    `first_written` (version 1) had nothing stored before, so nothing of theirs is cleared."""

    leaves: Mapping[str, LeafKnowledge] = field(default_factory=dict)
    dropped: tuple[str, ...] = ()
    first_written: frozenset[str] = frozenset()
    # The heads of the slots whose versions the commit may change, as they will be (None:
    # the slot is left empty); None when the writer did not derive them, so the store
    # drops the user's heads rather than keep ones that may be stale (`fact_heads`).
    heads: Mapping[Slot, SlotHead | None] | None = None


def leaf_knowledge(leaf: MemoryNode, facts: tuple[AtomicFact, ...] | None = None) -> LeafKnowledge:
    """What an L1's messages say, read from the messages it keeps verbatim: `facts` as an
    LLM read them, or the rules' facts when none are given."""
    return LeafKnowledge(
        facts=extract_facts(leaf.messages, user_id=leaf.user_id) if facts is None else facts,
        entities=read_leaf(leaf.messages),
    )


def knowledge_change(
    written: Sequence[MemoryNode],
    removed: Sequence[MemoryNode] = (),
    facts: Mapping[str, tuple[AtomicFact, ...]] | None = None,
) -> KnowledgeChange:
    """The knowledge of the L1s a commit writes and removes (other levels say nothing new:
    they summarise their leaves); `facts` by L1 id, when an LLM read them."""
    read = facts or {}
    l1s = [n for n in written if n.level == Level.SEGMENT]
    leaves = {n.id: leaf_knowledge(n, read.get(n.id)) for n in l1s}
    dropped = tuple(
        dict.fromkeys(n.id for n in removed if n.level == Level.SEGMENT and n.id not in leaves)
    )
    # A leaf removed in the same commit is not new, whatever its version.
    first = frozenset(n.id for n in l1s if n.version == 1) - {n.id for n in removed}
    return KnowledgeChange(leaves, dropped, first)


def cleared(written: Sequence[MemoryNode], removed: Sequence[MemoryNode] = ()) -> KnowledgeChange:
    """With the knowledge write off: nothing extracted, but L1s written again (a forget, a
    rebuild) or removed lose what an earlier run wrote about them, so nothing said outlives
    its messages. A first write has nothing to clear."""
    touched = [n for n in (*written, *removed) if n.level == Level.SEGMENT]
    if not removed and all(n.version == 1 for n in touched):
        return KnowledgeChange()
    return KnowledgeChange(dropped=tuple(dict.fromkeys(n.id for n in touched)))


def applied(
    stored: Mapping[str, LeafKnowledge], change: KnowledgeChange
) -> dict[str, LeafKnowledge]:
    """The contributions by leaf after `change` (an empty contribution is not kept)."""
    after = {leaf_id: k for leaf_id, k in stored.items() if leaf_id not in change.dropped}
    for leaf_id, knowledge in change.leaves.items():
        if knowledge.empty:
            after.pop(leaf_id, None)
        else:
            after[leaf_id] = knowledge
    return after


Timelines = Mapping[tuple[str, str, str], Timeline]  # by slot: (user, subject, attribute)


def current_facts(
    observations: Iterable[AtomicFact],
    subject: str | None = None,
    when: datetime | None = None,
    now: datetime | None = None,
) -> tuple[AtomicFact, ...]:
    """The versions that hold now (or at `when`, as known today), of one subject or all,
    ordered by subject, attribute, then version; given `now`, with the changes told to
    begin after it (`fact_timeline.current`)."""
    chosen = (f for f in as_speakers(observations) if subject is None or f.subject == subject)
    return facts_in(timelines_of(chosen), subject, when, now)


def facts_in(
    timelines: Timelines,
    subject: str | None = None,
    when: datetime | None = None,
    now: datetime | None = None,
) -> tuple[AtomicFact, ...]:
    """`current_facts` of timelines already derived (a reader's cache keeps them)."""
    found: list[AtomicFact] = []
    for slot, timeline in sorted(timelines.items()):
        if subject is None or slot[1] == subject:
            found += current(timeline, now) if when is None else at(timeline, when)
    return tuple(found)


def fact_history(
    observations: Iterable[AtomicFact], subject: str, attribute: str
) -> tuple[AtomicFact, ...]:
    """Every version of one subject's attribute, oldest first (superseded ones linked)."""
    # An ending told without its attribute may close this one (`fact_endings`).
    chosen = [
        f
        for f in as_speakers(observations)
        if f.subject == subject and f.attribute in {attribute, ENDED}
    ]
    return history_in(timelines_of(chosen), subject, attribute)


def history_in(timelines: Timelines, subject: str, attribute: str) -> tuple[AtomicFact, ...]:
    """`fact_history` of timelines already derived."""
    for slot, timeline in timelines.items():
        if slot[1:] == (subject, attribute):
            return history(timeline)
    return ()


def fact_versions(observations: Iterable[AtomicFact]) -> tuple[AtomicFact, ...]:
    """Every version of every subject's attributes, superseded ones linked, by subject,
    attribute, then version (oldest first)."""
    return versions_in(timelines_of(as_speakers(observations)))


def versions_in(timelines: Timelines) -> tuple[AtomicFact, ...]:
    """`fact_versions` of timelines already derived."""
    return tuple(v for _, timeline in sorted(timelines.items()) for v in history(timeline))


def facts_about(
    index: EntityIndex, facts: Iterable[AtomicFact], subject: str
) -> tuple[AtomicFact, ...] | None:
    """The facts about `subject` (an entity's name, key or alias, or a fact's subject key such
    as "speaker:maya"): those whose subject is that entity, is `subject` itself, or is named
    as `subject` says it ("Grace's dog", which no entity may stand for when no one said "my
    dog"); None when `subject` is neither a known entity nor the subject of any fact."""
    chosen = list(facts)
    wanted = subject_entity(index, subject)
    asked = name_key(subject)
    entity_of: dict[str, str | None] = {}
    found = []
    for fact in chosen:
        if fact.subject not in entity_of:
            entity_of[fact.subject] = subject_entity(index, fact.subject)
        if (
            fact.subject == subject
            or (wanted is not None and entity_of[fact.subject] == wanted)
            or (wanted is None and name_key(fact.subject_name) == asked)
        ):
            found.append(fact)
    if not found:
        found = _owned_thing(index, chosen, subject)
    if wanted is None and not found:
        return None
    return tuple(found)


# "Carla's dog", "Ana's car": a thing someone has, asked by its owner and what it is.
_NOT_THE_THING = frozenset({"a", "an", "the", "new", "old", "current", "former", "little", "big"})
_POSSESSED = re.compile(r"^(?P<owner>[^'\u2019]+?)['\u2019]s?\s+(?P<thing>\S.*)$")


def _owned_thing(index: EntityIndex, facts: Sequence[AtomicFact], subject: str) -> list[AtomicFact]:
    """When no fact is about a thing someone has ("Carla's dog": no one said "my dog"), the
    owner's facts about it ("Carla has a greyhound named Pepper")."""
    said = _POSSESSED.match(subject.strip())
    if said is None:
        return []
    owner = find_entity(index, said["owner"])
    owner_key = name_key(said["owner"])
    thing = set(name_key(said["thing"]).split()) - _NOT_THE_THING
    return [
        fact
        for fact in facts
        if (
            (owner is not None and subject_entity(index, fact.subject) == owner)
            or name_key(fact.subject_name) == owner_key
        )
        and _names_it(thing, fact)
    ]


def _names_it(thing: set[str], fact: AtomicFact) -> bool:
    """Whether the fact is about the thing: its slot is the thing ("car", "gp"), its value
    names it, or it is a pet of the kind the thing is ("dog": a greyhound)."""
    if fact.attribute in thing or not thing.isdisjoint(name_key(fact.value).split()):
        return True
    if fact.attribute != "pet":
        return False
    said = set(name_key(fact.value).split())
    return any(not thing.isdisjoint(words) and not said.isdisjoint(words) for words in _KINDS)


# A pet's kind by any of its words: "dog" asks for the greyhound, never for the cat.
_KINDS = tuple(PET_KINDS.values())


def entity_index(leaves: Mapping[str, LeafEntities]) -> EntityIndex:
    """The entity index of these leaves' surfaces (the leaves with none left out)."""
    return build({leaf_id: leaf for leaf_id, leaf in leaves.items() if leaf.surfaces})


def find_entity(index: EntityIndex, name: str) -> str | None:
    """The key of the entity `name` stands for: its key, an alias key, or a name resolved."""
    return index.keys.get(name) or resolve(index, name)


def named_entity(index: EntityIndex, name: str) -> Entity | None:
    """The entity `name` stands for (`find_entity`), or None."""
    key = find_entity(index, name)
    return index.entities.get(key) if key is not None else None


def entities_by_key(index: EntityIndex) -> list[Entity]:
    """Every entity of the index, by key."""
    return [index.entities[key] for key in sorted(index.entities)]


def said_before(observations: Iterable[AtomicFact], before: datetime) -> list[AtomicFact]:
    """The facts as said (no version derived) that memstream learned before `before`."""
    return [f for f in observations if f.recorded_at < before]


def subject_entity(index: EntityIndex, subject: str) -> str | None:
    """The entity a fact's subject is: "speaker:maya" is Maya, "kin:maya:brother" her brother."""
    if subject.startswith(SPEAKER_PREFIX):
        return find_entity(index, subject.removeprefix(SPEAKER_PREFIX))
    if subject.startswith(_KIN_PREFIX):
        owner, _, relation = subject.removeprefix(_KIN_PREFIX).partition(":")
        return resolve(index, f"{owner}'s {relation}")
    return find_entity(index, subject)
