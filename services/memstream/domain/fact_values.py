"""The value a fact pattern matched, cleaned and checked against the shape of its slot.

Precision over recall: a value is kept only when it looks like what its slot takes (a
capitalised place, a job from a list of occupations, a gerund for an activity, a proper
name for a person or a named thing); otherwise the pattern yields nothing.
"""

from __future__ import annotations

import re

from memstream.domain.calendar import MONTH_NAMES
from memstream.domain.fact_kinds import is_school, kind_of, named_place
from memstream.domain.fact_vocabulary import (
    ACTIVITIES,
    DIETS,
    DURABLE_GOODS,
    INSTRUMENTS,
    KIN,
    NATIONALITIES,
    NOT_NAMES,
    OCCUPATIONS,
    PETS,
    STOP_OBJECTS,
    VEHICLES,
)
from memstream.domain.lexical import tokenize

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
CALENDAR_WORDS = frozenset({*MONTH_NAMES, *_WEEKDAYS, "Christmas", "Easter"})
_NOT_A_SUBJECT = frozenset({"for", "to", "at", "with", "hard", "late", "abroad", "up", "really"})
TITLES = frozenset({
    "head", "director", "chief", "manager", "lead", "president", "dean", "principal",
})  # fmt: skip
BUSINESSES = frozenset({
    "business", "company", "shop", "store", "restaurant", "cafe", "bakery", "studio", "salon",
    "bar", "gym", "clinic", "practice", "agency", "startup", "firm", "label", "brand",
})  # fmt: skip
# "Trattoria del Sole", "Banca di Roma", "Van der Berg": the small words inside names.
_CONNECTORS = frozenset({
    "of", "de", "la", "do", "da", "and", "&", "del", "di", "du", "des", "der", "van", "von", "le",
})  # fmt: skip
_PLAYED = INSTRUMENTS | {a for a in ACTIVITIES if not a.endswith("ing")}

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
_DASH = re.compile(r"\s[-\u2013\u2014]+(?:\s|$)")
_MARKUP = re.compile(r"<[^>]*>|[*_`#\[\]{}|\\]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e]")
# "a startup called Routewise": the name is the value.
_CALLED = re.compile(r"^.{0,40}?\s(?:called|named)\s+(?=[A-Z])")


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


def is_name(words: list[str], *, nationality: bool = False) -> bool:
    """A proper name: capitalised words (a number may follow: "Pixel 8"), not a greeting,
    a calendar word, a relation ("Mom"), nor a nationality ("Irish") unless it may be one
    (a language: "learning Japanese")."""
    if not words or len(words) > 4 or not words[0][:1].isupper():
        return False
    first = words[0].lower()
    if first in NOT_NAMES or first in KIN or words[0] in CALENDAR_WORDS:
        return False
    if len(words) == 1 and first in NATIONALITIES and not nationality:
        return False
    return all(w[:1].isupper() or w.isdigit() or w in {"of", "de", "la", "&"} for w in words)


_ENDED_WORDS = 4


def shaped(shape: str, raw: str) -> str | None:
    """The value if it has the shape its slot takes, else None (precision over recall)."""
    if shape == "school":
        # An organisation named as a school ("Perimeter College"): its name says the slot.
        org = shaped("org", raw)
        return org if org is not None and is_school(org) else None
    if shape == "employer":
        # A named organisation that is no school and no day: "started at Perimeter College"
        # is studying there, "started at Easter" a time.
        org = shaped("org", raw)
        if org is None or not org[:1].isupper() or org.split()[0] in CALENDAR_WORDS:
            return None
        return None if is_school(org) else org
    if shape == "make":
        # A thing named by a known make ("Tecno Camon", "iPhone 12"): its kind is its slot.
        value = shaped("product", raw)
        return value if value is not None and kind_of(value) is not None else None
    if shape == "place_kind":
        # A place whose name says its kind ("EQ Bank", "Café Lumen"): the kind is its slot.
        place = named_place(raw)
        kept = clean_value(place) if place is not None else None
        return kept if kept == place and kept is not None and len(kept) <= MAX_VALUE_CHARS else None
    if shape == "medication":
        return _medication(raw)
    if shape == "medication_by_cue":
        # A word of medicine in the sentence: a lowercase word, or a capitalised one (a
        # place: "switched to Utrecht") only with a dose or a medicine's ending.
        medicine = _medication(raw)
        if medicine is None or medicine.islower() or " " in medicine:
            return medicine
        return medicine if is_medicine_name(medicine) else None
    if shape == "medicine_name":
        # Said without a word of medicine around it: only a name with a medicine's ending.
        medicine = _medication(raw)
        return medicine if medicine is not None and is_medicine_name(medicine.split()[0]) else None
    if shape in {"vehicle", "product"} and (model := _MAKE_AND_NUMBER.match(raw)):
        # "a Fiat 500 electric": a number after a make is its model, not a clause's start.
        text = " ".join(model["model"].split())
        return text if len(text) <= MAX_VALUE_CHARS else None
    if shape == "org":
        raw = _CALLED.sub("", raw)
    if shape in {"place", "org"}:
        raw = _name_first(raw)
    value = clean_value(raw)
    if value is None:
        return None
    words = value.split()
    first = words[0].lower()
    if first in _PRONOUNS:
        return None
    if shape == "ended":
        # What an ending names is checked against the values stated before it, not here.
        return value if len(words) <= _ENDED_WORDS else None
    if shape == "place":
        # "Berlin", "New York", "the Bay Area": every word capitalised past an article.
        named = words[1:] if first == "the" else words
        if not named or not all(w[0].isupper() or w in _CONNECTORS for w in named):
            return None
        return None if named[0].lower() in KIN or named[0].lower() in NOT_NAMES else value
    if shape in {"name", "proper"}:
        return value if is_name(words, nationality=shape == "proper") else None
    if shape == "org":
        named = words[1:] if first in {"the", "a", "an"} else words
        capitalised = bool(named) and named[0][0].isupper()
        if not capitalised and first not in {"a", "an", "the"}:
            return None
        return value if len(words) <= 4 else None
    if shape == "job":
        return _head_in(words, OCCUPATIONS)
    if shape == "title":
        # "head of pharmacy", "director of marketing": a title and what it heads.
        return value.lower() if len(words) <= 5 and is_job(value) else None
    if shape == "diet":
        return first if first in DIETS and len(words) <= 2 else None
    if shape == "pet":
        return _pet(words)
    if shape == "good":
        return _head_in(words, DURABLE_GOODS)
    if shape == "business":
        return _head_in(words, BUSINESSES)
    if shape == "language":
        # "Japanese", "German": a nationality's adjective names its language.
        return (
            value if len(words) == 1 and first in NATIONALITIES and words[0][0].isupper() else None
        )
    if shape in {"vehicle", "product"}:
        # A make or model ("Toyota Yaris", "iPhone 12") or a noun of the kind ("van").
        kinds = VEHICLES if shape == "vehicle" else DURABLE_GOODS | VEHICLES
        first_named = any(ch.isupper() for ch in words[0])  # not "a lot of Python"
        last = words[-1]
        if first_named and len(words) <= 4 and (last.isdigit() or any(c.isupper() for c in last)):
            return value
        return _head_in(words, kinds)
    if shape == "played":
        return first if first in _PLAYED and len(words) <= 2 else None
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


# A make, perhaps a model name, then a number that is no year: "Fiat 500", "iPhone 12".
_MAKE_AND_NUMBER = re.compile(
    r"(?P<model>[a-z]?[A-Z][\w-]*(?:\s+[A-Z][\w-]*){0,2}\s+(?!(?:19|20)\d\d\b)\d{1,4})\b"
    r"(?!\s*[%$:.,]\d)"
)


# The stems medicines are named with (the international nonproprietary names' endings:
# amlodipine, atorvastatin, ramipril, sertraline, metformin, omeprazole, ...).
_MEDICINE_STEM = re.compile(
    r"(?:pril|statin|sartan|olol|azole|cillin|mycin|cycline|azepam|formin|prazole|xetine|"
    r"triptan|lukast|dipine|aline|amine|oxetine|azine|iramine|olone|isone|profen|"
    r"mab|tinib|vir|semide|thiazide|gliptin|glutide|oxacin|codone|tadine)$"
)
# Words a dose is not: "on holiday", "taking notes", "started on Monday".
_NOT_MEDICINES = frozenset({
    "medication", "medications", "meds", "medicine", "medicines", "pills", "tablets",
    "something", "anything", "holiday", "vacation", "leave", "call", "board", "time",
    "track", "top", "fire", "duty", "break", "notes", "lessons", "classes", "course",
    "care", "charge", "shift", "shifts", "nights", "days", "weekends", "purpose", "hold",
    "rest", "exercise", "physio", "physiotherapy", "therapy", "diet", "waitlist", "list",
    "speaker", "mute", "notice", "probation", "bedrest", "sick",
})  # fmt: skip
_DOSE = re.compile(r"^\d+(?:\.\d+)?\s?(?:mg|mcg|ml|g)\b", re.IGNORECASE)


def _medication(raw: str) -> str | None:
    """A medicine named by one word, perhaps with its dose ("amlodipine", "Lipitor 20mg"):
    not a common word of "on"/"taking" ("on holiday", "taking notes"), a weekday or a name."""
    words = raw.split()
    if not words:
        return None
    word = words[0].strip(".,;:!?")
    lowered = word.lower()
    if (
        not word.isalpha()
        or not 4 <= len(word) <= 30
        or lowered in _NOT_MEDICINES
        or lowered in STOP_OBJECTS
        or word.capitalize() in CALENDAR_WORDS
        or lowered in NOT_NAMES
    ):
        return None
    rest = " ".join(words[1:3])
    dose = _DOSE.match(rest)
    return f"{word} {dose.group(0)}" if dose else word


def is_medicine_name(word: str) -> bool:
    """Whether a word has the ending of a medicine's international name."""
    return len(word) >= 6 and _MEDICINE_STEM.search(word.lower()) is not None


def _name_first(raw: str) -> str:
    """A value that opens with a name ends where the name does: "Vila Madalena got a new
    samba night" is Vila Madalena, "Lumen Analytics said yes" is Lumen Analytics."""
    words = raw.split()
    start = 1 if words and words[0].lower() == "the" else 0
    if len(words) <= start or not words[start][:1].isupper():
        return raw
    end = start
    while (
        end < len(words)
        and words[end] != "I"
        and (words[end][:1].isupper() or words[end] in _CONNECTORS)
    ):
        end += 1
    while end > start + 1 and words[end - 1] in _CONNECTORS:
        end -= 1  # "Rio de" is no place
    return " ".join(words[:end])


def is_job(words: str) -> bool:
    """An occupation ("senior nurse") or a title ("head of pharmacy")."""
    split = words.lower().split()
    # "head of pharmacy"; "head of the class" or "of the household" is no job.
    titled = len(split) > 2 and split[0] in TITLES and split[1] == "of" and split[2] != "the"
    return _head_in(split, OCCUPATIONS) is not None or bool(titled)


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
        if len(rest) == 1 and rest[0][:1].isupper() and rest[0] not in CALENDAR_WORDS:
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


def names(said: str, value: str) -> bool:
    """Whether what an ending says names a value: the content words of the shorter are all
    among the longer's ("the Magpies" names "Magpies", "climbing gym" names "the climbing
    gym"), and there is at least one."""
    if " ".join(said.casefold().split()) == " ".join(value.casefold().split()):
        return True
    a, b = frozenset(tokenize(said)), frozenset(tokenize(value))
    if not a or not b:
        return False
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return short <= long_
