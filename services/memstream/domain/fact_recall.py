"""Which facts a question asks about, and which of their versions recall returns first.

A question is about a subject (a person it names, or the one it names by relation: "Maya's
brother") and an attribute (where she lives, what she does). The subject is read with the
entity index; the attribute by the question's words against each slot's words: the
attribute's name, a few common words for it (`ATTRIBUTE_CUES`) and the texts of its
versions ("Maya lives in Berlin"). An attribute recall has no cue words for is still found
by its name and texts. Of the slots asked, recall returns the version true at the asked
time, or, for a question about what held before ("before Berlin", "used to"), the versions
it replaced, newest first, then it (with none replaced, those told before a change the
memories date: `held_before_change`); each carries its own validity, so a superseded version
is never returned as holding. Pure, standard library only (and the stemmer).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime

from memstream.domain.entities import name_key
from memstream.domain.entity_index import EntityIndex, query_entities
from memstream.domain.fact_timeline import Timeline, at, planned
from memstream.domain.fact_vocabulary import ATTRIBUTE_SYNONYMS, KIN
from memstream.domain.facts import SPEAKER_PREFIX, AtomicFact, kin_key, speaker_key, value_key
from memstream.domain.knowledge import find_entity, subject_entity
from memstream.domain.lexical import STOPWORDS, stem, term_set
from memstream.domain.query import Query
from memstream.domain.tokens import count_tokens

Slot = tuple[str, str]  # (subject, attribute) of one user's facts

# Common English words for an attribute, beside its own name's words. General, not one
# set's phrasing: the verbs and nouns any conversation asks a fact with.
_PARTNER_WORDS = (
    "partner dating date seeing married marry engaged engagement wife husband boyfriend"
    " girlfriend spouse"
)
_CAR_WORDS = "car drive drives driving vehicle"
_CUE_WORDS = {
    "lives_in": "live living lives home city town based reside neighbourhood neighborhood"
    " country move moved stay address",
    "works_at": "work works working employer employed company firm office workplace employ",
    # Not "living": its stem is "live", which asks where someone lives ("for a living" is
    # read as a phrase, `_asking_words`).
    "job": "job work works working role profession occupation career title",
    "relationship": f"{_PARTNER_WORDS} relationship single",
    "diet": "diet eat eats eating meat vegan vegetarian food",
    "studies": "study studies studying school college university course learning learn"
    " attend degree major student",
    "likes": "like likes love loves enjoy enjoys favourite favorite fan",
    "hobby": "hobby hobbies sport pastime into play plays playing",
    "pet": "pet pets animal dog cat",
    "owns": "own owns drive drives car phone laptop ride rides bike",
    # The slots extraction keeps for memberships, schools, instruments and vehicles:
    # "Which band is Liam in?", "Which school does she attend?", "What does she drive?"
    "member_of": "member club team band group gym join joined belong belongs",
    "team": "team club play plays playing",
    "studies_at": "school college university study studies studying attend attends student",
    "volunteers_at": "volunteer volunteers volunteering charity",
    "plays": "play plays playing instrument",
    "car": _CAR_WORDS,
    "motorbike": "motorbike motorcycle bike ride rides riding",
    "name": "name named call called",
    "surname": "surname name",
    # Open attributes a reader names often (`fact_output.read_attribute`).
    "partner": _PARTNER_WORDS,
    "vehicle": f"{_CAR_WORDS} ride rides riding bike motorbike",
    "doctor": "doctor gp physician",
    "manager": "manager manages manage managed managing report reports",
}
# With the nouns extraction reads as each attribute ("my employer": works_at).
ATTRIBUTE_CUES: Mapping[str, frozenset[str]] = {
    attribute: frozenset(stem(w) for w in words.split())
    | {stem(noun) for noun, same in ATTRIBUTE_SYNONYMS.items() if same == attribute}
    for attribute, words in _CUE_WORDS.items()
}
# At most this many slots answer one question: ties beyond it are noise, not evidence.
MAX_SLOTS = 3
# Facts may take this share of a recall's token budget, and at most this many are returned:
# a "before" question on one slot needs what held and what replaced it; the rest of the
# budget is the memories', which carry the evidence and the context.
FACT_SHARE = 0.2
MAX_FACTS = 4

_FIRST_PERSON = re.compile(r"\b(?:I|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself)\b")
_WHO = re.compile(r"\s*who\b", re.IGNORECASE)
# "Who is Anjali?", "who's Karim": a name asked about alone.
_WHO_IS = re.compile(r"\s*(?i:who)(?:'s|\s+(?i:is|was))\s+([A-Z][\w-]*)\s*\??\s*$")
_CAPITALISED = re.compile(r"\b[A-Z][\w-]*")
_NAME_AFTER = re.compile(r"\s+([A-Z][\w-]*)")
_POSSESSIVE = re.compile(r"\b([A-Z][\w-]*)'s\s+([a-z]+)(?:\s+([a-z]+))?")
# Relations to a group of people: "Wei's parents" asks about them, never about Wei. Only
# "parents" and "grandparents", who share a home, are in KIN, which extraction reads
# subjects by; the others name no one group to key facts on.
_GROUP_KIN = frozenset({
    "parents", "grandparents", "kids", "children", "sons", "daughters", "brothers",
    "sisters", "siblings", "cousins", "friends", "in-laws", "roommates", "flatmates",
    "colleagues", "coworkers", "neighbours", "neighbors",
})  # fmt: skip


def asked_subjects(query: Query, index: EntityIndex) -> tuple[tuple[str, ...], ...]:
    """The subjects a question may be about, in tiers, each an entity key or a fact subject
    key: a name given right after a relation first ("Aino's old flatmate Veera": Veera),
    then someone named by relation ("Maya's brother": the brother, never Maya), then,
    for a thing the owner has ("Grace's dog"), the owner; else everyone the question names
    (none: `asked_slots` turns to the speakers when the question says "I" or "my"). A name
    given after a relation is the only subject: with nothing known of Veera, Aino's own
    city is no answer to where Veera lives."""
    apposed = _apposed(query, index)
    return (apposed,) if apposed else _relation_tiers(query, index)


def _apposed(query: Query, index: EntityIndex) -> tuple[str, ...]:
    """The name right after someone's relation ("Aino's old flatmate Veera"): whom the
    question asks about, known to the index or not (a fact may be keyed by the name)."""
    for match in _POSSESSIVE.finditer(query.text):
        named = _NAME_AFTER.match(query.text, match.end())
        if named is not None and named.group(1).casefold() not in STOPWORDS:
            name = named.group(1)
            found = find_entity(index, name)
            return tuple(dict.fromkeys(k for k in (found, name_key(name), speaker_key(name)) if k))
    return ()


def _keys_of(index: EntityIndex, name: str) -> tuple[str, ...]:
    """The keys someone named may have: their entity's, if the index knows them, and a
    speaker's."""
    return tuple(k for k in (find_entity(index, name), speaker_key(name)) if k)


def _relation_tiers(query: Query, index: EntityIndex) -> tuple[tuple[str, ...], ...]:
    """`asked_subjects` past an apposed name: by relation, a thing's owner, or the names."""
    for match in _POSSESSIVE.finditer(query.text):
        owner, first, second = match.groups()
        for relation in filter(None, (f"{first} {second}" if second else None, first)):
            found = find_entity(index, f"{owner}'s {relation}")
            kin = relation in KIN or relation in _GROUP_KIN
            if found is None and not kin:
                continue
            possessed = tuple(k for k in (found, kin_key(speaker_key(owner), relation)) if k)
            if kin:
                return (possessed,)
            return (possessed, _keys_of(index, owner))
    named = query_entities(index, query.text)
    speakers = tuple(speaker_key(index.entities[k].name) for k in named if k in index.entities)
    return ((*named, *speakers),) if named else ()


def worded_slots(query: Query, facts: Iterable[AtomicFact]) -> dict[Slot, int]:
    """The slots of `facts` sharing a word with the question, with how many they share:
    read before the entity index, so a question sharing none costs no more."""
    by_slot: dict[Slot, list[AtomicFact]] = {}
    for fact in facts:
        by_slot.setdefault((fact.subject, fact.attribute), []).append(fact)
    shared = {slot: _overlap(query, slot, versions) for slot, versions in by_slot.items()}
    return {slot: count for slot, count in shared.items() if count}


def asked_slots(query: Query, facts: Iterable[AtomicFact], index: EntityIndex) -> tuple[Slot, ...]:
    """The slots of `facts` the question asks about, best first: of its first tier of
    subjects that has a slot sharing a word with the question, the slots sharing the most."""
    facts = list(facts)
    worded = worded_slots(query, facts)
    # "Who is Tariq's flatmate?" asks Tariq's `flatmate` slot ("my flatmate Josh"), as well
    # as anything said of the flatmate themself; "Which school does Emily's daughter go
    # to?" asks only of the daughter.
    named = _relation_slots(query, worded, index) if _WHO.match(query.text) else []
    named += _slots_naming(query, worded, facts)
    tiers = asked_subjects(query, index) or _speakers_named(query, worded)
    if not tiers and _FIRST_PERSON.search(query.text):
        # "Where do I live now?" names no one: the asker is one of the speakers.
        tiers = (tuple(subject for subject, _ in worded if subject.startswith(SPEAKER_PREFIX)),)
    for tier in tiers:
        wanted = set(tier)
        scored = [
            (count, slot)
            for slot, count in worded.items()
            if slot[0] in wanted or (subject_entity(index, slot[0]) or "") in wanted
        ]
        best = max((score for score, _ in scored), default=0)
        if best:
            found = sorted(slot for score, slot in scored if score == best)
            return tuple(dict.fromkeys([*named, *found]))[:MAX_SLOTS]
    return tuple(named[:MAX_SLOTS])


def _speakers_named(query: Query, worded: Mapping[Slot, int]) -> tuple[tuple[str, ...], ...]:
    """The speakers the question names, when the entity index found no one: a speaker is
    someone talked about whatever their name, though a name that is also a word ("Jun",
    "Summer", "Will") is no entity the index keeps from the text alone."""
    speakers = {speaker_key(word) for word in _CAPITALISED.findall(query.text)}
    named = tuple(s for s in dict.fromkeys(subject for subject, _ in worded) if s in speakers)
    return (named,) if named else ()


def _slots_naming(
    query: Query, worded: Mapping[Slot, int], facts: Iterable[AtomicFact]
) -> list[Slot]:
    """For "Who is Anjali?", the slots whose value is that name, whoever they are of
    ("Devika's sister is Anjali"): who someone is, is what they are to the people talked
    about."""
    asked = _WHO_IS.match(query.text)
    if asked is None:
        return []
    key = value_key(asked.group(1))
    return sorted({f.slot[1:] for f in facts if f.slot[1:] in worded and value_key(f.value) == key})


def _relation_slots(query: Query, worded: Mapping[Slot, int], index: EntityIndex) -> list[Slot]:
    """The slots of an owner named by a relation the question asks of them ("Tariq's
    flatmate": Tariq's `flatmate`; "Ana's husband": her `partner`), among those worded."""
    found: list[Slot] = []
    for match in _POSSESSIVE.finditer(query.text):
        owner, first, second = match.groups()
        owners = set(_keys_of(index, owner))
        for noun in filter(None, (f"{first}_{second}" if second else None, first)):
            attribute = ATTRIBUTE_SYNONYMS.get(noun, noun)
            found += [
                slot
                for slot in worded
                if slot[1] == attribute
                and (slot[0] in owners or subject_entity(index, slot[0]) in owners)
            ]
    return sorted(dict.fromkeys(found))


def asked_instant(query: Query, when: datetime) -> datetime:
    """The time a question asks about: the middle of a time it names ("in June 2023"; "next
    month", where a change told ahead may hold), else `when`."""
    span = query.time_range
    if query.state != "then" or span is None:
        return when
    if span.start >= when:
        return span.start + (span.end - span.start) / 2
    return span.start + (min(span.end, when) - span.start) / 2


def facts_for_query(
    query: Query, histories: Mapping[Slot, Sequence[AtomicFact]], when: datetime
) -> tuple[AtomicFact, ...]:
    """The versions to return, in order: for a question about a state, those true at the
    asked time, then, asked about now, the changes told to begin later ("I'm joining Wipro
    next month": the employer holding now first, the planned one after it); for a "before"
    question, the versions they replaced, newest first, then those; none for a question
    about no state."""
    if query.state is None:
        return ()
    instant = asked_instant(query, when)
    holding = [
        v for versions in histories.values() for v in _named(query, at_time(versions, instant))
    ]
    if query.state == "now":
        holding += [v for versions in histories.values() for v in planned_after(versions, when)]
    if query.state != "before":
        return tuple(holding)
    # The answer to "before" is what a change replaced; what replaced it follows as context.
    # With nothing replaced there is no answer, and the holding value would pose as one.
    earlier = [v for versions in histories.values() for v in _replaced(query, versions, instant)]
    return tuple(dict.fromkeys([*earlier, *holding])) if earlier else ()


def held_before_change(
    query: Query, versions: Sequence[AtomicFact], change: datetime
) -> tuple[AtomicFact, ...]:
    """For a "before" question whose change the memories date (`change`, just before the
    session first naming what the question says came after, "before her doctor's advice"),
    when no version was closed: the versions holding then that were told on an earlier day,
    less any whose value the question names (that is what came after). What a change
    replaced held when it was told, though no fact recorded its end: the change was told in
    words no fact was read from. Told on an earlier day, not only begun by then: a value told
    with the change may be dated earlier ("three weeks of bouldering") and is what came
    after, and the change's own day may have begun with it."""
    day = change.astimezone(UTC).date()
    return tuple(
        v
        for v in at_time(versions, change)
        if v.recorded_at.astimezone(UTC).date() < day and not term_set(v.value) <= query.term_set
    )


def planned_after(versions: Sequence[AtomicFact], instant: datetime) -> tuple[AtomicFact, ...]:
    """The versions of one slot told by `instant` to begin after it."""
    return tuple(v for v in planned(versions, instant) if v.recorded_at <= instant)


def at_time(versions: Sequence[AtomicFact], instant: datetime) -> tuple[AtomicFact, ...]:
    """The versions of one slot true at `instant` (no negation: "no longer" states no value)."""
    return at(Timeline(observations=(), versions=tuple(versions)), instant)


def fact_tokens(fact: AtomicFact) -> int:
    """What a returned fact costs: its sentence and its validity as a reader would see it,
    "Maya lives in Porto (14 January 2023 to 9 April 2024)"."""
    return count_tokens(f"{fact.text} ({validity_phrase(fact)})")


def validity_phrase(fact: AtomicFact) -> str:
    """A fact's validity in words, dated as a leaf is: "since 9 April 2024", or from-to; a
    change told ahead of its start "from 1 February 2027"."""
    start = _day(fact.valid_from)
    if fact.valid_to is not None:
        return f"{start} to {_day(fact.valid_to)}"
    return f"from {start}" if fact.valid_from > fact.recorded_at else f"since {start}"


def fit_facts(facts: Sequence[AtomicFact], max_tokens: int) -> tuple[list[AtomicFact], int]:
    """The facts that fit `FACT_SHARE` of `max_tokens`, in order, and the tokens they take."""
    cap = int(max_tokens * FACT_SHARE)
    kept: list[AtomicFact] = []
    total = 0
    for fact in facts[:MAX_FACTS]:
        cost = fact_tokens(fact)
        if total + cost > cap:
            break
        kept.append(fact)
        total += cost
    return kept, total


def _overlap(query: Query, slot: Slot, versions: Sequence[AtomicFact]) -> int:
    """How many of the question's words (its subject's name aside) the slot's words hold."""
    names = {t for v in versions for t in term_set(v.subject_name)}
    words = set(ATTRIBUTE_CUES.get(slot[1], frozenset()))
    words |= {stem(w) for w in slot[1].split("_")}
    for version in versions:
        words |= term_set(version.text) | term_set(version.value)
    return len((_asking_words(query) - names) & words)


# "What does she do for a living?" asks her job; "living" alone asks where she lives.
_FOR_A_LIVING = re.compile(r"\bfor an? living\b", re.IGNORECASE)
_JOB = stem("job")


def _asking_words(query: Query) -> frozenset[str]:
    """The question's words as slots are matched with them: "for a living" is one word, job."""
    if not _FOR_A_LIVING.search(query.text):
        return query.term_set
    return (query.term_set - {stem("living")}) | {_JOB}


def _named(query: Query, versions: Sequence[AtomicFact]) -> Sequence[AtomicFact]:
    """Of several values holding at once (a multi-valued attribute: "likes reading", "likes
    surfing"), those whose words the question shares, when some do: "What does Tim do to
    escape reality?" wants "Tim likes escaping reality", not everything he likes."""
    if len(versions) < 2:
        return versions
    shared = [v for v in versions if term_set(v.value) & query.term_set]
    return shared or versions


def _replaced(query: Query, versions: Sequence[AtomicFact], instant: datetime) -> list[AtomicFact]:
    """The versions of one slot closed by `instant`, the one a value the question names
    replaced first ("before Berlin"), then the most recently closed."""
    closed = [v for v in versions if not v.negated and v.valid_to and v.valid_to <= instant]
    closed.sort(key=lambda v: v.valid_to or v.valid_from, reverse=True)
    named = {
        v.supersedes
        for v in versions
        if v.supersedes and term_set(v.value) and term_set(v.value) <= query.term_set
    }
    return sorted(closed, key=lambda v: v.fact_id not in named)


def _day(instant: datetime) -> str:
    return f"{instant.day} {instant:%B %Y}"
