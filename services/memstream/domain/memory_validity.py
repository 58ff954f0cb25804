"""A recalled memory's validity on the slots a question asks about, and the order it sets.

A memory states the fact versions whose messages it holds: a leaf its own messages, a
summary the messages behind the facts its (trimmed) text keeps, or, with none kept, all its
span's. Validity is read on the asked slots only: a leaf about Porto carries when Berlin
replaced it for "Where does Maya live?", and nothing for "What does she do?". A memory that
states several versions carries the one that held latest (the current one if it states
it): it is stale only when all it says on the slot is. A memory that states none of them
but names a replaced value, and none that holds, carries that value's version, whenever it
was said. One that names none but was said before an asked slot changed held at most until
that change: what anyone said about where Maya lives in 2022 describes what held before she
said she lives in Berlin in 2024, whether or not its words were read as a fact. For a
question about a state, a memory whose validity excludes the asked time never outranks one
that holds then. Pure, standard library only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime, timedelta

from memstream.domain.facts import AtomicFact
from memstream.domain.lexical import term_set
from memstream.domain.models import Level, MemoryNode
from memstream.domain.ranking import RecalledMemory
from memstream.domain.validity import EndBasis, Validity

# A demoted memory's score sits this far below the lowest one that holds.
_BELOW = 1e-6
# "Before" a change is the instant just before it began.
_JUST_BEFORE = timedelta(microseconds=1)


def memory_sources(node: MemoryNode) -> frozenset[str]:
    """The ids of the messages a memory states: a leaf's own; a summary's kept facts'."""
    if node.level is not Level.SEGMENT and node.facts:
        return frozenset(s for fact in node.facts for s in fact.source_ids)
    return frozenset(node.source_ids)


def memory_validity(
    node: MemoryNode, versions: Sequence[AtomicFact], *, said_before: bool = False
) -> Validity | None:
    """The validity of the latest-holding version the memory states; if it states none,
    with `said_before`, until the change that followed it (`said_before_change`); else None."""
    sources = memory_sources(node)
    stated = [v for v in versions if not sources.isdisjoint(v.source_ids)]
    if not stated:
        if not said_before:
            return None
        return names_replaced(node, versions) or said_before_change(node, versions)
    latest = max(stated, key=_holds_until)
    ended = latest.valid_to is not None or latest.superseded_by is not None
    return Validity(
        latest.valid_from,
        latest.valid_to,
        latest.superseded_by,
        _end_basis(latest, versions) if ended else None,
    )


def _end_basis(version: AtomicFact, versions: Sequence[AtomicFact]) -> EndBasis:
    """How a closed version's end was known: "inferred" when an ending told without its
    attribute closed it (`fact_endings`: the slot was read from the values stated before,
    not said), else "stated"."""
    closer = next((v for v in versions if v.fact_id == version.superseded_by), None)
    inferred = closer is not None and closer.negated and closer.certainty == "implied"
    return "inferred" if inferred else "stated"


def names_replaced(node: MemoryNode, versions: Sequence[AtomicFact]) -> Validity | None:
    """For a memory that states no version: the validity of the replaced version whose value
    it names, when it names no value that still holds. A value is said long after it ended
    ("Did Lumen try to keep you?" on the new job's first day; "every box in the Porto flat"
    while packing for Berlin): whenever said, the name means that version, and the version
    says when it held. Naming a holding value too ("moved from Porto to Berlin"), it says
    nothing of its own here. None when it names no replaced value."""
    words = term_set(node.text)
    named = [v for v in versions if not v.negated and _names(words, v)]
    if not named or any(v.valid_to is None for v in named):
        return None
    latest = max(named, key=_holds_until)
    return Validity(latest.valid_from, latest.valid_to, latest.superseded_by, "inferred")


def said_before_change(node: MemoryNode, versions: Sequence[AtomicFact]) -> Validity | None:
    """For a memory that states no version: valid until the first version of its slot that
    began after the memory ended, replaced by that version. Over several slots, the latest
    such change (the memory may be about any of them, so it is closed only once all have
    changed); None when some slot has not changed since the memory."""
    first_after: dict[tuple[str, str, str], AtomicFact] = {}
    slots = {v.slot for v in versions}
    for version in versions:
        if version.valid_from <= node.t_end:
            continue
        known = first_after.get(version.slot)
        if known is None or version.valid_from < known.valid_from:
            first_after[version.slot] = version
    if not slots or len(first_after) < len(slots):
        return None
    change = max(first_after.values(), key=lambda v: v.valid_from)
    return Validity(None, change.valid_from, change.fact_id, "inferred")


def with_validity(
    memories: Sequence[RecalledMemory],
    versions: Sequence[AtomicFact],
    *,
    said_before: bool = False,
) -> list[RecalledMemory]:
    """The memories, each with its validity on these versions (`memory_validity`)."""
    return [
        dataclasses.replace(m, validity=memory_validity(m.node, versions, said_before=said_before))
        for m in memories
    ]


def excludes(validity: Validity | None, instant: datetime) -> bool:
    """Whether a validity says the memory's value did not hold at `instant`."""
    if validity is None:
        return False
    closed = validity.valid_to is not None and validity.valid_to <= instant
    return closed or (validity.valid_from is not None and validity.valid_from > instant)


def holds(validity: Validity | None, instant: datetime) -> bool:
    return validity is not None and not excludes(validity, instant)


def stale_below_holding(
    memories: Sequence[RecalledMemory], instant: datetime
) -> list[RecalledMemory]:
    """Scores where no memory stale at `instant` outranks one that holds then: a stale one
    above the lowest holding score drops just below it (the others keep theirs)."""
    floor = min((m.score for m in memories if holds(m.validity, instant)), default=None)
    if floor is None:
        return list(memories)
    return [
        dataclasses.replace(m, score=floor - _BELOW)
        if excludes(m.validity, instant) and m.score >= floor
        else m
        for m in memories
    ]


def stale_last(memories: Sequence[RecalledMemory], instant: datetime) -> list[RecalledMemory]:
    """The same order, but within each level the memories stale at `instant` after the
    rest (a stable partition: the order among each part is kept)."""
    return sorted(memories, key=lambda m: (int(m.node.level), excludes(m.validity, instant)))


def begun_after_last(memories: Sequence[RecalledMemory], instant: datetime) -> list[RecalledMemory]:
    """For a question about what held before the change at `instant`: the same order, but
    within each level the memories whose value began after it last. Not those that ended by
    then (`stale_last`): what ended just before the change is the answer."""
    return sorted(memories, key=lambda m: (int(m.node.level), _begun_after(m.validity, instant)))


def _begun_after(validity: Validity | None, instant: datetime) -> bool:
    return (
        validity is not None and validity.valid_from is not None and validity.valid_from > instant
    )


def before_change(
    versions: Sequence[AtomicFact], query_terms: frozenset[str], when: datetime
) -> datetime | None:
    """The instant a question about what held *before* asks about: just before the change it
    names ("before Berlin": when a version whose value the question holds began), else just
    before the latest change among the versions holding at `when`. None without such a version.
    """
    return named_change(versions, query_terms) or latest_change(versions, when)


def named_change(versions: Sequence[AtomicFact], query_terms: frozenset[str]) -> datetime | None:
    """Just before the first version whose value the question names began; None if none."""
    named = [
        v
        for v in versions
        if not v.negated and term_set(v.value) and term_set(v.value) <= query_terms
    ]
    return min(v.valid_from for v in named) - _JUST_BEFORE if named else None


def latest_change(versions: Sequence[AtomicFact], when: datetime) -> datetime | None:
    """Just before the latest change among the versions holding at `when`; None if none."""
    holding = [
        v for v in versions if not v.negated and v.valid_from <= when and not _ended(v, when)
    ]
    return max(v.valid_from for v in holding) - _JUST_BEFORE if holding else None


def order_before(memories: Sequence[RecalledMemory], instant: datetime) -> list[RecalledMemory]:
    """For a question about what held before `instant`: by level, then those that ended
    before it first, each part by how near its end lies to it (the words said just before a
    change are the likeliest to tell what it replaced)."""
    return sorted(
        memories,
        key=lambda m: (
            int(m.node.level),
            m.node.t_end > instant,
            abs((m.node.t_end - instant).total_seconds()),
            m.node.id,
        ),
    )


def _names(words: frozenset[str], version: AtomicFact) -> bool:
    """Whether a memory's words hold every word of the version's value."""
    value = term_set(version.value)
    return bool(value) and value <= words


def _ended(version: AtomicFact, when: datetime) -> bool:
    return version.valid_to is not None and version.valid_to <= when


def _holds_until(version: AtomicFact) -> tuple[bool, datetime]:
    return (version.valid_to is None, version.valid_to or version.valid_from)
