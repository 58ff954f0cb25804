"""Supersession with history: the versions of one (user, subject, attribute), bi-temporally.

A timeline keeps every observed fact (what each message said) and derives its versions
from them: observations sorted by event time, a run of equal values merged into one version
(a re-statement confirms, it does not add), each version closed by the next (`valid_to` =
the next one's `valid_from`) and linked to it. Because versions are a function of the *set*
of observations, the order messages arrive in cannot change them: a late message lands in
its place and is closed by whatever followed it, a replay adds nothing, and forgetting a
message re-derives the rest, re-opening what its facts had closed. Links follow one total
order, so supersession can never be circular.

A single-valued attribute (lives_in) is one chain; a multi-valued one (likes) is one chain
per value, so "likes jazz" never closes "likes painting", only "no longer likes painting"
does. Nothing is deleted but what a forget removes. Pure, standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from memstream.domain.fact_endings import with_endings
from memstream.domain.facts import AtomicFact, is_single_valued

# A version restated in every session would otherwise carry a source per restatement: it
# keeps the latest few and a count; every source stays with the statements (observations).
SOURCES_KEPT = 8


@dataclass(frozen=True, slots=True)
class Timeline:
    """The facts of one (user, subject, attribute): what was said, and the versions it makes."""

    observations: tuple[AtomicFact, ...] = ()
    versions: tuple[AtomicFact, ...] = ()


@dataclass(frozen=True, slots=True)
class TimelineChange:
    """What a store must write to go from one timeline to the next: one value per decision."""

    upserts: tuple[AtomicFact, ...]  # versions new or changed (validity, links, sources)
    deletes: tuple[str, ...]  # ids of versions that no longer exist


def timeline_of(observations: Iterable[AtomicFact]) -> Timeline:
    """The timeline of these observed facts, all of one slot; duplicates (by id) count once."""
    unique: dict[str, AtomicFact] = {}
    for fact in map(_observed, observations):
        seen = unique.get(fact.fact_id)
        # One id is one claim of one message; should two differ (a re-extraction that cased
        # a value otherwise), the earlier in a fixed order wins, whatever arrived first.
        if seen is None or _tiebreak(fact) < _tiebreak(seen):
            unique[fact.fact_id] = fact
    ordered = tuple(sorted(unique.values(), key=chain_order))
    slots = {fact.slot for fact in ordered}
    if len(slots) > 1:
        raise ValueError(f"a timeline holds one (user, subject, attribute), got {sorted(slots)}")
    return Timeline(observations=ordered, versions=_versions(ordered))


def timelines_of(facts: Iterable[AtomicFact]) -> dict[tuple[str, str, str], Timeline]:
    """Facts of any slots, each slot's into its own timeline: (user, subject, attribute).
    An ending told without its attribute closes the slots whose value it names
    (`fact_endings`) and has no timeline of its own."""
    grouped: dict[tuple[str, str, str], list[AtomicFact]] = {}
    for fact in with_endings(facts):
        grouped.setdefault(fact.slot, []).append(fact)
    return {slot: timeline_of(group) for slot, group in grouped.items()}


def add(timeline: Timeline, fact: AtomicFact) -> Timeline:
    """The timeline with `fact` observed; a fact already there changes nothing."""
    if _observed(fact) in timeline.observations:
        return timeline
    return timeline_of((*timeline.observations, fact))


def forget(timeline: Timeline, message_ids: Iterable[str]) -> Timeline:
    """The timeline without the facts of these messages: a fact never outlives any message
    it comes from. What they had closed is re-opened by re-deriving the versions."""
    gone = frozenset(message_ids)
    kept = [fact for fact in timeline.observations if gone.isdisjoint(fact.source_ids)]
    if len(kept) == len(timeline.observations):
        return timeline
    return timeline_of(kept)


def change(before: Timeline, after: Timeline) -> TimelineChange:
    """The versions to write and to delete to turn `before` into `after`."""
    old = {version.fact_id: version for version in before.versions}
    new = {version.fact_id: version for version in after.versions}
    upserts = tuple(v for key, v in new.items() if old.get(key) != v)
    deletes = tuple(key for key in old if key not in new)
    return TimelineChange(upserts=upserts, deletes=deletes)


def current(timeline: Timeline, now: datetime | None = None) -> tuple[AtomicFact, ...]:
    """The versions that hold now (at most one for a single-valued attribute), with, given
    `now`, a change told ahead of its start and not begun by `now` ("I'm joining Wipro next
    month") beside the version it will close, which holds until then."""
    ahead = {v.fact_id for v in planned(timeline.versions, now)} if now is not None else set()
    return tuple(
        v for v in timeline.versions if v.is_current or (not v.negated and v.superseded_by in ahead)
    )


def told_ahead(fact: AtomicFact) -> bool:
    """Whether it was told before it began: a change said as scheduled."""
    return fact.valid_from > fact.recorded_at


def planned(versions: Iterable[AtomicFact], when: datetime) -> tuple[AtomicFact, ...]:
    """The versions told ahead of their start (`told_ahead`) that begin after `when`."""
    return tuple(v for v in versions if v.valid_from > when and told_ahead(v))


def begun_by(versions: Iterable[AtomicFact], when: datetime) -> tuple[AtomicFact, ...]:
    """The versions as they stand at `when`: a change told ahead of its start and not begun
    by then is no version yet, and the one it will close holds, unclosed (what dates the
    memories stating them). A version learned later than `when` is kept, as known today."""
    chosen = tuple(versions)
    ahead = {v.fact_id for v in planned(chosen, when)}
    return tuple(
        replace(v, valid_to=None, superseded_by=None) if v.superseded_by in ahead else v
        for v in chosen
        if v.fact_id not in ahead
    )


def at(timeline: Timeline, when: datetime) -> tuple[AtomicFact, ...]:
    """What was true at `when`, as far as we know today."""
    return tuple(
        v
        for v in timeline.versions
        if not v.negated and v.valid_from <= when and (v.valid_to is None or when < v.valid_to)
    )


def known_at(timeline: Timeline, when: datetime) -> tuple[AtomicFact, ...]:
    """What we held to be current at `when`: the versions derived from the facts recorded
    by then (a later message may since have corrected or back-dated them)."""
    learned = [fact for fact in timeline.observations if fact.recorded_at <= when]
    return current(timeline_of(learned))


def history(timeline: Timeline) -> tuple[AtomicFact, ...]:
    """Every version, oldest first, negations included ("no longer works at X")."""
    return timeline.versions


def _observed(fact: AtomicFact) -> AtomicFact:
    """An observation as said: validity and links are the timeline's to derive."""
    if fact.valid_to is None and fact.supersedes is None and fact.superseded_by is None:
        return fact
    return replace(fact, valid_to=None, supersedes=None, superseded_by=None)


def chain_order(fact: AtomicFact) -> tuple[datetime, datetime, bool, str]:
    """The order of a slot's observations, the same whatever order they arrived in."""
    # Event time first; on a tie the later-learned fact is the newer word, and an ending
    # ("used to live in Porto") comes before a beginning said with it ("now I live in
    # Berlin"); the id breaks the remaining ties so every arrival order gives one order.
    return (fact.valid_from, fact.recorded_at, not fact.negated, fact.fact_id)


def _tiebreak(fact: AtomicFact) -> tuple[datetime, datetime, str, str, str, str]:
    return (
        fact.valid_from,
        fact.recorded_at,
        fact.value,
        fact.text,
        fact.subject_name,
        fact.certainty,
    )


def _versions(ordered: tuple[AtomicFact, ...]) -> tuple[AtomicFact, ...]:
    found = chains(ordered)
    if len(found) == 1:
        return found[0]
    # Stable on valid_from alone: a merged version's record time can precede its
    # predecessor's, and the chain's own order must survive the sort.
    return tuple(sorted((v for chain in found for v in chain), key=lambda v: v.valid_from))


def chains(ordered: tuple[AtomicFact, ...]) -> list[tuple[AtomicFact, ...]]:
    """The version chains of one slot's observations in `chain_order`: the one chain of a
    single-valued attribute, one per value of a many-valued one."""
    if not ordered:
        return []
    if is_single_valued(ordered[0].attribute):
        return [_chain(ordered)]
    by_value: dict[str, list[AtomicFact]] = {}
    for fact in ordered:
        by_value.setdefault(fact.value_key, []).append(fact)
    return [_chain(group) for group in by_value.values()]


def _chain(ordered: Iterable[AtomicFact]) -> tuple[AtomicFact, ...]:
    """Runs of equal (value, negated) merged into versions, each closed by the next."""
    runs: list[list[AtomicFact]] = []
    for fact in ordered:
        last = runs[-1][0] if runs else None
        replaced_at_once = last is not None and last.negated and last.valid_from == fact.valid_from
        if replaced_at_once and not fact.negated:
            # An ending replaced at the same instant ("I used to live in Porto, now I live
            # in Berlin") is no version of its own: Berlin supersedes Porto.
            runs.pop()
            last = runs[-1][0] if runs else None
        if last is not None and (last.value_key, last.negated) == (fact.value_key, fact.negated):
            runs[-1].append(fact)
        elif fact.negated and last is not None and last.value_key != fact.value_key:
            # "No longer lives in Porto" while Berlin holds agrees with Berlin: it neither
            # closes it nor starts a version of its own.
            continue
        else:
            runs.append([fact])
    versions = [_merged(run) for run in runs]
    linked = []
    for index, version in enumerate(versions):
        before = versions[index - 1] if index else None
        after = versions[index + 1] if index + 1 < len(versions) else None
        linked.append(
            replace(
                version,
                valid_to=after.valid_from if after else None,
                supersedes=before.fact_id if before else None,
                superseded_by=after.fact_id if after else None,
            )
        )
    return tuple(linked)


def _merged(run: list[AtomicFact]) -> AtomicFact:
    """One version from a run of observations of one value: the first one's id, wording and
    start; how many statements it merges and the sources of the latest (`kept_sources`);
    learned when first learned; stated if any said it outright."""
    first = run[0]
    sources = kept_sources((), (source for fact in run for source in fact.source_ids))
    if len(run) == 1:
        return first if sources == first.source_ids else replace(first, source_ids=sources)
    stated = any(fact.certainty == "stated" for fact in run)
    return replace(
        first,
        source_ids=sources,
        recorded_at=min(fact.recorded_at for fact in run),
        certainty="stated" if stated else first.certainty,
        statements=len(run),
    )


def kept_sources(kept: Iterable[str], newer: Iterable[str]) -> tuple[str, ...]:
    """The sources a version keeps: the latest `SOURCES_KEPT` distinct ones of `kept` then
    `newer`, oldest first. A function of the sequence's tail alone, so a restatement steps
    a version forward from what it keeps (`fact_heads`) as a derivation from every
    statement would give it."""
    latest: list[str] = []
    for source in reversed((*kept, *newer)):
        if source not in latest:
            latest.append(source)
            if len(latest) == SOURCES_KEPT:
                break
    return tuple(reversed(latest))
