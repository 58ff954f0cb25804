"""An LLM's facts about one L1 made into atomic facts, keyed and checked as the rules' are.

The model names a subject (a speaker, someone by relation to the speaker, or by name), an
attribute, a value and, when the lines say it, the date it began to hold. The attribute is
one of the fixed list or, where none fits, a noun for the slot ("medication", "favourite
café"), read as the rules read the noun of "my landlord is ..." (`read_attribute`): a
singular noun holds one value at a time, so a new landlord closes the old one. An ending
told without its attribute ("I've left the Magpies") is the attribute `ended` naming what
ended: it becomes the rules' reading of such a sentence, a negated `ENDED` observation the
timelines resolve against the values stated before it (`domain.fact_endings`), unless the
same lines end an attribute of that subject outright. Everything else is decided here, so
both backends' facts read alike and supersede one another: subjects get the rules' keys
(`speaker:maya`, `kin:maya:brother`), values and names are cleaned as the rules clean
them, citations are kept only when they name a message of the leaf (a fact citing none is
dropped), a fact is dated by its first message unless the model's date is a real one no
later than a year after it, and one message giving two values of a single-valued slot
yields neither.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from datetime import date, datetime, time, timedelta
from typing import Protocol

from memstream.domain.fact_extraction import (
    clean_name,
    clean_value,
    fact_sentence,
    open_attribute,
    without_named_endings,
)
from memstream.domain.fact_kinds import slot_of_thing
from memstream.domain.facts import (
    ATTRIBUTES,
    ENDED,
    AtomicFact,
    Certainty,
    is_single_valued,
    kin_key,
    make_fact,
    speaker_key,
    value_key,
)
from memstream.domain.models import MemoryNode, SourceMessage

# A start this long after the message is a misreading, not a plan.
LATEST_START = timedelta(days=366)
# The attributes the model is offered by name: the fixed list, and an ending without one.
READ_ATTRIBUTES = ATTRIBUTES | {ENDED}


# How each attribute reads in a fact's sentence, held and ended.
class ReadFact(Protocol):
    subject: str
    relation_of: str | None
    attribute: str
    value: str
    negated: bool
    since: str | None
    certainty: Certainty
    source_ids: list[str]


def facts_of(read: Sequence[ReadFact], leaf: MemoryNode) -> tuple[AtomicFact, ...]:
    """The atomic facts of the model's answer about `leaf`, in its order, checked."""
    messages = {m.event_id: m for m in leaf.messages}
    speakers = {value_key(clean_name(m.speaker)): clean_name(m.speaker) for m in leaf.messages}
    facts = [
        fact for item in read if (fact := _fact(item, leaf.user_id, messages, speakers)) is not None
    ]
    return _without_contradictions(_endings_unnamed(facts))


def _fact(
    item: ReadFact,
    user_id: str,
    messages: dict[str, SourceMessage],
    speakers: dict[str, str],
) -> AtomicFact | None:
    cited = [messages[s.strip()] for s in dict.fromkeys(item.source_ids) if s.strip() in messages]
    value = clean_value(item.value)
    read = read_attribute(item.attribute)
    if not cited or value is None or read is None:
        return None
    first = min(cited, key=lambda m: m.ts)
    subject, name = _subject(item, clean_name(first.speaker), speakers)
    # As the rules do: "owns a Pixel 8" is the phone slot, so either backend's new phone
    # replaces the old one.
    attribute = slot_of_thing(read, value)
    # An ending is what ended, whatever the model set `negated` to.
    negated = item.negated or attribute == ENDED
    return make_fact(
        user_id=user_id,
        subject=subject,
        subject_name=name,
        attribute=attribute,
        value=value,
        text=fact_sentence(name, attribute, value, negated),
        valid_from=_start(item.since, first),
        recorded_at=max(m.ts for m in cited),
        source_ids=tuple(m.event_id for m in cited),
        certainty=item.certainty,
        negated=negated,
    )


def read_attribute(named: str) -> str | None:
    """The attribute a model named: one it was offered, however spelled ("Lives In"), else
    its noun as a slug read as the rules read a possessive noun ("Favourite café":
    favourite_cafe, "employer": works_at, "my GP": gp); None for what names no lasting
    attribute ("point", "guess") or cannot be a slug."""
    folded = unicodedata.normalize("NFKD", named.casefold())
    words = "".join(c for c in folded if not unicodedata.combining(c)).replace("-", " ").split()
    if words[:1] == ["my"]:
        words = words[1:]
    slug = "_".join(words)
    if slug in READ_ATTRIBUTES:
        return slug
    opened = open_attribute(" ".join(words)) if words else None
    return opened[0] if opened is not None else None


def _subject(item: ReadFact, speaker: str, speakers: dict[str, str]) -> tuple[str, str]:
    """The subject's key and name: someone by relation belongs to whoever the model says
    they are related to (a speaker of the leaf; else the message's speaker)."""
    named = clean_name(item.subject)
    if item.relation_of and item.relation_of.strip():
        owner = speakers.get(value_key(clean_name(item.relation_of)), speaker)
        relation = named.lower().removeprefix("my ").strip() or "relative"
        return kin_key(speaker_key(owner), relation), f"{owner}'s {relation}"
    if value_key(named) in speakers or value_key(named) in {"i", "me", "speaker"}:
        own = speakers.get(value_key(named), speaker)
        return speaker_key(own), own
    # Keyed by the name alone, as the entity index keys it; never a speaker's or a kin's key.
    plain = named.replace(":", " ").strip() or "unknown"
    return value_key(plain), plain


def _start(since: str | None, message: SourceMessage) -> datetime:
    """The model's date at the start of that day in the message's offset, if it is one and
    not far beyond the message; otherwise when the message was said."""
    try:
        day = date.fromisoformat((since or "").strip())
    except ValueError:
        return message.ts
    start = datetime.combine(day, time(), tzinfo=message.ts.tzinfo)
    return start if start <= message.ts + LATEST_START else message.ts


def _endings_unnamed(facts: list[AtomicFact]) -> list[AtomicFact]:
    """Without an ending told without its attribute where the same lines end an attribute
    of its subject outright ("I sold my car": car), as the rules read one message."""
    by_lines: dict[tuple[str, ...], list[AtomicFact]] = {}
    for fact in facts:
        by_lines.setdefault(fact.source_ids, []).append(fact)
    kept = {f.fact_id for group in by_lines.values() for f in without_named_endings(tuple(group))}
    return [fact for fact in facts if fact.fact_id in kept]


def _without_contradictions(facts: list[AtomicFact]) -> tuple[AtomicFact, ...]:
    """One message giving two values of one single-valued slot cannot be settled by its
    words: it yields neither; a fact given twice counts once."""
    values: dict[tuple[str, str, bool, tuple[str, ...]], set[str]] = {}
    for fact in facts:
        slot = (fact.subject, fact.attribute, fact.negated, fact.source_ids)
        values.setdefault(slot, set()).add(fact.value_key)
    kept: dict[str, AtomicFact] = {}
    for fact in facts:
        slot = (fact.subject, fact.attribute, fact.negated, fact.source_ids)
        if is_single_valued(fact.attribute) and len(values[slot]) > 1:
            continue
        kept.setdefault(fact.fact_id, fact)
    return tuple(kept.values())
