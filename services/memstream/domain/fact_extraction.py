"""Offline extraction of atomic facts from what a person says, by general English patterns.

Precision over recall: a wrong fact served as true is worse than a missing one, so a pattern
fires only on a plain statement (not a question, not after "if" or "would"), from a subject
at the head of a clause ("I", "we", "my brother"), with a value of the shape its slot takes
(a capitalised place, a job from a list of occupations, a gerund for an activity). What a
speaker says about someone else ("my brother moved to Madrid") is a fact about that person.
Assistant turns are skipped: an assistant's "I" is nobody the user's memory is about.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import datetime

from memstream.domain.calendar import MONTH_NAMES
from memstream.domain.fact_patterns import PATTERNS, Pattern
from memstream.domain.fact_time import began_at
from memstream.domain.fact_vocabulary import (
    ACTIVITIES,
    DIETS,
    DURABLE_GOODS,
    OCCUPATIONS,
    PETS,
    STOP_OBJECTS,
)
from memstream.domain.facts import (
    AtomicFact,
    is_single_valued,
    kin_key,
    make_fact,
    speaker_key,
    value_key,
)
from memstream.domain.models import SourceMessage

# A value that is a pronoun or a placeholder names nothing ("we moved here", "I love it").
_PRONOUNS = frozenset({
    "it", "that", "this", "those", "these", "them", "you", "him", "her", "me", "us",
    "here", "there", "myself", "himself", "herself", "ourselves", "something", "someone",
})  # fmt: skip

# Gerunds that say nothing alone: "I just like playing", "I love learning".
_NEEDS_OBJECT = frozenset({
    "playing", "learning", "escaping", "curling", "collecting", "doing", "listening", "watching",
})  # fmt: skip

_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_CALENDAR_WORDS = frozenset({*MONTH_NAMES, *_WEEKDAYS, "Christmas", "Easter"})
_NOT_A_SUBJECT = frozenset({"for", "to", "at", "with", "hard", "late", "abroad", "up", "really"})

MAX_VALUE_WORDS = 6
MAX_VALUE_CHARS = 60
MAX_NAME_CHARS = 60

_CLAUSE_END = re.compile(
    # "and" ends a value unless a name goes on ("Marks and Spencer", "Trinidad and Tobago").
    r"\s+(?:and(?!\s+(?-i:(?!I\b)[A-Z]))|but|because|cause|since|so|when|where|which|who|"
    r"while|after|before|with|"
    r"for|to|until|as|if|though|although|now|recently|last|this|next|ago|in \d{4}|"
    r"about|around|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|"
    r"several|a couple|\d+|at|in|on|from|near|by|during|over|right|"
    r"here|there|back|these days|nowadays|every|each|whenever|lately|anymore|any more|too|"
    r"again|together|full-time|part-time)\b.*$",
    re.IGNORECASE,
)
_DROPPED_I = re.compile(
    r"^(?=(?:just\s+|finally\s+|recently\s+)?(?:been|moved|relocated|started|got|adopted|bought|"
    r"quit|lost|took up|picked up)\b)",
    re.IGNORECASE,
)
_LIST_SHAPES = frozenset({"activity", "hobby", "pet"})  # "Marks and Spencer" is one employer
_CLOSED_LIST = re.compile(r",[^,]*\b(?:and|or)\s+[^,]*$", re.IGNORECASE)
_LIST_SEPARATOR = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")
_ARTICLE = re.compile(r"^\s*(?:a|an|the|some|two|three)\s+", re.IGNORECASE)
_DASH = re.compile(r"\s[-\u2013\u2014]+(?:\s|$)")
_MARKUP = re.compile(r"<[^>]*>|[*_`#\[\]{}|\\]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# Every pattern's subject is one of these words ("I", "I'm", "we", "my brother", "our dog"):
# a sentence without any is passed over before the patterns, most sentences in chat.
_SUBJECT_WORD = re.compile(r"\b(?:i|im|we|my|our)\b", re.IGNORECASE)
_PAST_STATE = re.compile(r"\b(?:used to|lived|worked)\b", re.IGNORECASE)
# "I got a puppy for my niece": a gift, not a pet of the speaker's.
_FOR_SOMEONE = re.compile(
    r"\s+for\s+(?:my|his|her|our|their|the|a|an|(?-i:[A-Z]\w*))\b", re.IGNORECASE
)
_HYPOTHETICAL = re.compile(
    r"\b(?:if|would|wish|hope|want|wanna|might|maybe|planning|plan|going to|gonna|dream|"
    r"someday|imagine|should|could)\b",
    re.IGNORECASE,
)


def extract_facts(messages: Sequence[SourceMessage], *, user_id: str) -> tuple[AtomicFact, ...]:
    """The atomic facts these messages state, in message order, contradictions dropped."""
    facts: list[AtomicFact] = []
    for message in messages:
        if message.role == "assistant":
            continue
        facts.extend(_without_contradictions(tuple(_message_facts(message, user_id))))
    return tuple(facts)


def clean_value(raw: str) -> str | None:
    """A value as stored: no markup or control characters, no trailing clause, bounded."""
    text = _CONTROL.sub(" ", _MARKUP.sub(" ", raw))
    text = _CLAUSE_END.sub("", " ".join(text.split()))
    text = _DASH.split(text)[0].strip(" '\"-\u2013\u2014")
    words = text.split()
    if not words or len(words) > MAX_VALUE_WORDS or len(text) > MAX_VALUE_CHARS:
        return None
    return text


def clean_name(raw: str) -> str:
    """A speaker's name fit to display and key: hostile text reduced, length bounded."""
    text = " ".join(_CONTROL.sub(" ", _MARKUP.sub(" ", raw)).split())
    return text[:MAX_NAME_CHARS].strip() or "unknown"


def _message_facts(message: SourceMessage, user_id: str) -> Iterator[AtomicFact]:
    speaker = clean_name(message.speaker)
    for sentence in _SENTENCE.split(message.text.replace("\u2019", "'")):
        # Chat drops the "I" of a sentence ("Moved to Leeds last year"); put it back.
        sentence = _DROPPED_I.sub("I ", sentence.strip(), count=1)
        if not sentence or sentence.endswith("?") or _HYPOTHETICAL.search(sentence):
            continue
        if not _SUBJECT_WORD.search(sentence):
            continue  # no pattern can match: the segmenter runs this on every L1
        for pattern in PATTERNS:
            for match in pattern.regex.finditer(sentence):
                yield from _facts(pattern, match, sentence, message, speaker, user_id)


def _facts(
    pattern: Pattern,
    match: re.Match[str],
    sentence: str,
    message: SourceMessage,
    speaker: str,
    user_id: str,
) -> Iterator[AtomicFact]:
    if pattern.fixed is not None:
        yield _fact(pattern, pattern.fixed, match, sentence, message, speaker, user_id)
        return
    # A list yields its items up to the first that is not a value: in "I love hiking and
    # my kids love it" the list ends at "and".
    raw = match["value"]
    if pattern.shape in {"pet", "good"} and not pattern.negated and _FOR_SOMEONE.search(raw):
        return
    if pattern.shape in _LIST_SHAPES and "," in raw and not _CLOSED_LIST.search(raw):
        # Without a closing "and"/"or" the comma starts another clause, not a list item
        # ("I love experimenting in the kitchen, coming up with something new").
        raw = raw.split(",", 1)[0]
    items = _LIST_SEPARATOR.split(raw) if pattern.shape in _LIST_SHAPES else [raw]
    for index, item in enumerate(items):
        value = _shaped(pattern.shape, _ARTICLE.sub("", item) if index else item)
        if value is None:
            return
        yield _fact(pattern, value, match, sentence, message, speaker, user_id)


def _fact(
    pattern: Pattern,
    value: str,
    match: re.Match[str],
    sentence: str,
    message: SourceMessage,
    speaker: str,
    user_id: str,
) -> AtomicFact:
    kin = match.groupdict().get("kin")
    if kin:
        relation = " ".join(kin.split()[1:]).lower()
        subject, name = kin_key(speaker_key(speaker), relation), f"{speaker}'s {relation}"
    else:
        subject, name = speaker_key(speaker), speaker
    certainty = pattern.certainty
    clause = sentence[match.start() :]  # a time phrase of another clause dates nothing here
    return make_fact(
        user_id=user_id,
        subject=subject,
        subject_name=name,
        attribute=pattern.attribute,
        value=value,
        text=_sentence(name, pattern.attribute, value, pattern.negated),
        valid_from=_valid_from(pattern, match, clause, message),
        recorded_at=message.ts,
        source_ids=(message.event_id,),
        certainty=certainty,
        negated=pattern.negated,
    )


def _valid_from(
    pattern: Pattern, match: re.Match[str], clause: str, message: SourceMessage
) -> datetime:
    # "I quit my job at the bank last month" ended last month; "I used to live in Porto
    # ten years ago" says when Porto held, not when it ended, so it ends when said.
    if pattern.negated and _PAST_STATE.search(match.group(0)):
        return message.ts
    return began_at(clause, message.ts)


def _shaped(shape: str, raw: str) -> str | None:
    """The value if it has the shape its slot takes, else None (precision over recall)."""
    value = clean_value(raw)
    if value is None:
        return None
    words = value.split()
    first = words[0].lower()
    if first in _PRONOUNS:
        return None
    if shape == "place":
        # "Berlin", "New York", "the Bay Area": every word capitalised past an article.
        named = words[1:] if first == "the" else words
        if not named or not all(w[0].isupper() or w in {"of", "de", "la"} for w in named):
            return None
        return value
    if shape == "org":
        named = words[1:] if first in {"the", "a", "an"} else words
        capitalised = bool(named) and named[0][0].isupper()
        if not capitalised and first not in {"a", "an", "the"}:
            return None
        return value if len(words) <= 4 else None
    if shape == "job":
        return _head_in(words, OCCUPATIONS)
    if shape == "diet":
        return first if first in DIETS and len(words) <= 2 else None
    if shape == "pet":
        return _pet(words)
    if shape == "good":
        return _head_in(words, DURABLE_GOODS)
    if shape == "activity":
        return _activity(words)
    if shape == "hobby":
        return _activity(words) if first in ACTIVITIES else None
    if shape == "subject":
        # "biology", "computer science"; not "for my exams" nor "hard".
        lowered = {word.lower() for word in words}
        if len(words) > 4 or first in _NOT_A_SUBJECT or lowered & STOP_OBJECTS:
            return None
        return None if first.endswith("ing") else value
    raise ValueError(f"unknown value shape {shape!r}")


def _head_in(words: list[str], lexicon: frozenset[str]) -> str | None:
    # "a registered nurse", "an art teacher": up to three words ending in a known noun.
    if len(words) > 3:
        return None
    head = words[-1].lower().rstrip("s") if words[-1].lower() not in lexicon else words[-1].lower()
    return " ".join(words).lower() if head in lexicon else None


def _pet(words: list[str]) -> str | None:
    # "dog named Max", "puppy called Bo", "cat", "two cats", "cute little pup": up to two
    # describing words, then the animal, then perhaps its name.
    for index, word in enumerate(words[:3]):
        kind = word.lower() if word.lower() in PETS else word.lower().rstrip("s")
        if kind not in PETS:
            continue
        rest = words[index + 1 :]
        if len(rest) >= 2 and rest[0].lower() in {"named", "called"} and rest[1][:1].isupper():
            return f"{kind} named {rest[1]}"
        if len(rest) == 1 and rest[0][:1].isupper() and rest[0] not in _CALENDAR_WORDS:
            return f"{kind} named {rest[0]}"  # "our dog Biscuit"
        return kind if not rest else None
    return None


def _activity(words: list[str]) -> str | None:
    # A gerund or a noun of the activity list leads ("painting", "playing the guitar",
    # "pottery"); "I love how ...", "I love it" and "I love you" never reach here.
    if len(words) > 4:
        return None  # cut short it would say something else ("sinking into different")
    lowered = [word.lower() for word in words]
    if len(lowered) == 1 and lowered[0] in _NEEDS_OBJECT:
        return None
    if any(word in STOP_OBJECTS for word in lowered[1:]):
        return None
    first = lowered[0]
    if first in STOP_OBJECTS:
        return None
    if first in ACTIVITIES or (first.endswith("ing") and len(first) > 5):
        return " ".join(words)
    if len(lowered) == 2 and lowered[1] in ACTIVITIES:
        return " ".join(words)  # "rock climbing", "ice skating"
    return None


def _sentence(name: str, attribute: str, value: str, negated: bool) -> str:
    verb = {
        "lives_in": ("lives in", "no longer lives in"),
        "works_at": ("works at", "no longer works at"),
        "job": ("is a", "is no longer a"),
        "relationship": ("is", "is no longer"),
        "diet": ("is", "is no longer"),
        "pet": ("has a", "no longer has the"),
        "owns": ("owns a", "no longer owns the"),
        "studies": ("studies", "no longer studies"),
        "likes": ("likes", "no longer likes"),
        "hobby": ("took up", "gave up"),
    }.get(attribute, ("said", "no longer said"))[negated]
    if verb.endswith(" a") and value[:1].lower() in "aeiou":
        verb += "n"
    return f"{name} {verb} {value}"


def _without_contradictions(facts: tuple[AtomicFact, ...]) -> tuple[AtomicFact, ...]:
    """One message giving two values of one single-valued slot ("I live in Rome. I live in
    Oslo.") cannot be settled by its words, so it yields neither; a duplicate yields one."""
    values: dict[tuple[str, str, bool], set[str]] = {}
    for fact in facts:
        values.setdefault((fact.subject, fact.attribute, fact.negated), set()).add(fact.value_key)
    kept: dict[str, AtomicFact] = {}
    for fact in facts:
        slot = (fact.subject, fact.attribute, fact.negated)
        if is_single_valued(fact.attribute) and not fact.negated and len(values[slot]) > 1:
            continue
        if fact.negated and value_key(fact.value) in values.get(
            (fact.subject, fact.attribute, False), set()
        ):
            continue  # "used to live in X ... live in X": the message does not say which
        kept.setdefault(fact.fact_id, fact)
    return tuple(kept.values())
