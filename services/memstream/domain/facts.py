"""Atomic facts: one thing said about one subject, with when it held and when we learned it.

A summary's `Fact` is a bullet of prose; an `AtomicFact` is a typed claim ("Maya lives in
Berlin") that a newer claim on the same subject and attribute can supersede. Each fact has
two times: `valid_from`/`valid_to` (event time: when it held in the world) and `recorded_at`
(record time: when memstream learned it), so "what was true on D" and "what did we know on
D" are different questions with different answers. Pure, standard library only.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from memstream.domain.ids import NAMESPACE

Certainty = Literal["stated", "implied"]
# A version as of a time: holding then, told to begin later, or over (a negation says a
# value ended).
Status = Literal["holds", "planned", "ended"]

# A new value of a single-valued attribute closes the old one: a person lives in one place
# at a time. Values of a multi-valued attribute accumulate until one is negated.
SINGLE_VALUED = frozenset({
    "lives_in", "works_at", "job", "relationship", "diet", "studies", "studies_at", "partner",
    "car", "name",
})  # fmt: skip
MULTI_VALUED = frozenset({
    "likes", "hobby", "pet", "owns", "statement", "plays", "member_of", "volunteers_at", "uses",
})  # fmt: skip
# An ending told without its attribute ("I've left the Magpies", "sold the Vespa"): an
# observation of this pseudo-attribute (a slug, so no attribute of the closed set an LLM is
# offered) names only what ended; the timelines resolve it into the slot of the same subject
# whose value it names (`fact_endings`) and keep no slot of it.
ENDED = "ended"
ATTRIBUTES = SINGLE_VALUED | MULTI_VALUED
# Where someone who works for no employer works (`works_at`): a value, so that it closes
# the employer before it as any new employer does.
SELF_EMPLOYED = "self-employed"

# Past the closed set, an attribute is a possessive noun made a slug ("my GP is ...": gp,
# "my flatmates": flatmates). The noun's number says how many values it holds: "my
# flatmate" is one person at a time, "my flatmates" several. A few singular nouns are of
# things a person commonly has several of at once, and count as plural.
_SLUG = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+){0,3}")
MAX_ATTRIBUTE_CHARS = 32
_IRREGULAR_PLURALS = frozenset({"children", "people", "men", "women", "feet", "teeth", "mice"})
_NOT_PLURAL_ENDINGS = ("ss", "us", "is", "ics")
_SEVERAL_AT_ONCE = frozenset({
    "brother", "sister", "son", "daughter", "child", "kid", "cousin", "aunt", "uncle",
    "niece", "nephew", "friend", "colleague", "coworker", "neighbour", "neighbor",
    "grandchild", "grandson", "granddaughter", "teammate", "classmate",
})  # fmt: skip

SPEAKER_PREFIX = "speaker:"


@dataclass(frozen=True, slots=True)
class AtomicFact:
    """One claim about one subject; `negated` says the value stopped holding at valid_from."""

    fact_id: str
    user_id: str
    subject: str  # entity key: "speaker:maya", "kin:maya:brother", "name:max"
    subject_name: str  # for display: "Maya", "Maya's brother"
    attribute: str
    value: str
    text: str  # a readable sentence: "Maya lives in Berlin"
    valid_from: datetime
    recorded_at: datetime
    certainty: Certainty = "stated"
    source_ids: tuple[str, ...] = ()
    negated: bool = False
    valid_to: datetime | None = None  # None while it holds
    supersedes: str | None = None
    superseded_by: str | None = None
    # A version merges a run of statements of one value: how many, while `source_ids` keeps
    # the sources of the latest few (`fact_timeline.SOURCES_KEPT`). An observation is one.
    statements: int = 1

    @property
    def slot(self) -> tuple[str, str, str]:
        """The timeline a fact belongs to: its user, subject and attribute."""
        return (self.user_id, self.subject, self.attribute)

    @property
    def value_key(self) -> str:
        """The value compared for equality: case and spacing do not make a new value."""
        return value_key(self.value)

    @property
    def is_current(self) -> bool:
        return self.valid_to is None and not self.negated


@dataclass(frozen=True, slots=True)
class FactReading:
    """An L1's facts and what read them, as an extraction id of `domain.derivation`: the
    LLM backend's facts prompt, or the rules when it fell back to them. The L1 records the
    reader that actually answered, so a rebuild with the model back reads it again."""

    facts: tuple[AtomicFact, ...]
    extraction: str


def status_at(fact: AtomicFact, when: datetime) -> Status:
    """What a version is at `when`: planned before its start, ended once closed."""
    if fact.valid_from > when:
        return "planned"
    if fact.negated or (fact.valid_to is not None and fact.valid_to <= when):
        return "ended"
    return "holds"


def is_attribute(attribute: str) -> bool:
    """A known attribute, or an open one shaped as a slug: "gp", "favourite_band"."""
    if attribute in ATTRIBUTES:
        return True
    return len(attribute) <= MAX_ATTRIBUTE_CHARS and _SLUG.fullmatch(attribute) is not None


def is_single_valued(attribute: str) -> bool:
    if attribute in ATTRIBUTES:
        return attribute in SINGLE_VALUED
    if not is_attribute(attribute):
        raise ValueError(f"not a fact attribute {attribute!r}")
    head = attribute.rsplit("_", 1)[-1]
    return not _is_plural(head) and head not in _SEVERAL_AT_ONCE


def _is_plural(noun: str) -> bool:
    if noun in _IRREGULAR_PLURALS:
        return True
    return len(noun) > 3 and noun.endswith("s") and not noun.endswith(_NOT_PLURAL_ENDINGS)


def value_key(value: str) -> str:
    return " ".join(value.casefold().split())


def speaker_key(name: str) -> str:
    """Entity key of a speaker: "speaker:maya"."""
    return SPEAKER_PREFIX + value_key(name)


def kin_key(owner_key: str, relation: str) -> str:
    """Entity key of someone named by relation: "my brother" said by Maya."""
    owner = owner_key.removeprefix(SPEAKER_PREFIX)
    return f"kin:{owner}:{value_key(relation)}"


def fact_id(
    user_id: str,
    subject: str,
    attribute: str,
    value: str,
    negated: bool,
    source_ids: tuple[str, ...],
) -> str:
    """Deterministic: the same claim from the same messages always gets the same id, so a
    replayed message overwrites its facts instead of adding copies."""
    parts = [
        "fact",
        user_id,
        subject,
        attribute,
        value_key(value),
        "not" if negated else "is",
        *sorted(source_ids),
    ]
    return str(uuid.uuid5(NAMESPACE, json.dumps(parts)))


def make_fact(
    *,
    user_id: str,
    subject: str,
    subject_name: str,
    attribute: str,
    value: str,
    text: str,
    valid_from: datetime,
    recorded_at: datetime,
    source_ids: tuple[str, ...],
    certainty: Certainty = "stated",
    negated: bool = False,
) -> AtomicFact:
    """An observed fact, open-ended and unlinked, with its deterministic id."""
    is_single_valued(attribute)  # rejects what is not an attribute slug
    if not source_ids:
        raise ValueError("a fact needs the ids of the messages it comes from")
    if valid_from.tzinfo is None or recorded_at.tzinfo is None:
        raise ValueError("fact times must carry an offset or zone")
    return AtomicFact(
        fact_id=fact_id(user_id, subject, attribute, value, negated, source_ids),
        user_id=user_id,
        subject=subject,
        subject_name=subject_name,
        attribute=attribute,
        value=value,
        text=text,
        valid_from=valid_from,
        recorded_at=recorded_at,
        certainty=certainty,
        source_ids=source_ids,
        negated=negated,
    )
