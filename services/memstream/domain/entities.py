"""Who and what a message names, read without an LLM: pure functions.

A mention is one of: a proper name (a capitalised span that is not a function word, a
greeting, a calendar word or "I"), a kin or role reference of the speaker ("my sister",
"our dog"), a name given to one of those ("my sister Anna", "a dog named Max"), or the
speaker, when they talk about themselves ("I", "me", "my").

Capitalisation is weak evidence at the start of a sentence (every word is capitalised
there) and for names that are also common words ("Will", "Grace", "May"): such mentions
are marked `weak`, and the entity index keeps them only for names it has seen as names
elsewhere. Nothing here guesses a kind from the name itself; the words around it decide.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from memstream.domain.entity_lexicon import (
    DATE_CONTEXT,
    DROPPED_QUALIFIERS,
    FIRST_PERSON,
    GREETINGS,
    KEPT_QUALIFIERS,
    MONTHS,
    ORG_NOUNS,
    ORG_SUFFIXES,
    PERSON_NOUNS,
    PET_NOUNS,
    PLACE_NOUNS,
    PLACE_PREPOSITIONS,
    PLACE_SUFFIXES,
    PLACE_VERBS,
    RELATION_NOUNS,
    RELATION_SYNONYMS,
    THING_NOUNS,
    TITLES,
)
from memstream.domain.entity_words import POSSESSIVE, Words, read_words
from memstream.domain.fact_referents import owned_kind
from memstream.domain.fact_vocabulary import FEMALE_KIN, MALE_KIN

EntityKind = Literal["person", "pet", "place", "organisation", "thing", "unknown"]
MentionForm = Literal["name", "relation", "speaker"]

# Bounds that keep hostile text (a 10,000-character "name", a wall of capitals) from
# becoming entities: longer runs are headlines or shouting (and `entity_words`: longer
# words are not names).
MAX_NAME_TOKENS = 4
MAX_NAME_CHARS = 80
MAX_MENTIONS_PER_MESSAGE = 64
MAX_TEXT_CHARS = 20_000  # read this much of a message; a longer one is a document
# A message with at least this many words in capitals, half its words or more, shouts.
SHOUTING_MIN_WORDS = 3

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_TAG = re.compile(r"<[^<>]{0,200}>|&[a-zA-Z]{2,8};")
# What may follow an apposition: "my sister, Anna," / "Anna, my sister." / end of text.
_APPOSITION_ENDS = frozenset({",", ".", "!", "?", ";", ")", ""})
_OWNED_BY = frozenset({"my", "our"})  # the owners' words of a relation besides a possessive
# How many possessives of relations a chain follows past the first ("my sister's husband's
# brother"): a bound on what hostile text can make of one phrase.
_MAX_CHAIN = 3
# "My sister is visiting. Her name is Anjali": a sentence opening by naming someone.
_NAME_IS = re.compile(r"(?:^|[.!?]\s+)(?P<pron>[Hh]is|[Hh]er)\s+name(?:'s|\s+is)\s+(?=[A-Z])")


@dataclass(frozen=True, slots=True)
class Mention:
    """One entity a message names: a name, a relation of someone, or the speaker."""

    name: str  # as shown: "Melanie", "Caroline's sister", the speaker's name
    key: str  # normalised: "melanie", "caroline's sister"
    kind: EntityKind
    form: MentionForm
    weak: bool = False  # only capitalisation vouches for it: kept where known elsewhere
    alias_of: str | None = None  # a relation key this name was given ("my sister Anna")
    start: int = 0  # where in the cleaned text it begins (the speaker: 0)


def clean_text(text: str) -> str:
    """The text without markup, control characters or compatibility forms."""
    if not text.isascii():  # ASCII is its own NFKC form and holds none of _QUOTES
        text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    if "<" in text or "&" in text:  # every tag or entity opens with one of them
        text = _TAG.sub(" ", text)
    if text.isprintable():
        # No character of a C category is printable: nothing to replace, and most chat
        # messages take this path rather than the loop over every character below.
        return text
    return "".join(
        ch if not unicodedata.category(ch).startswith("C") else ("\n" if ch in "\r\n" else " ")
        for ch in text
    )


def name_key(name: str) -> str:
    """The normalised key of a name: case-folded, possessive and extra spaces removed."""
    return _clean_key(clean_text(name))


def _shown_key(shown: str) -> str:
    """`name_key` of a name made of the words of a cleaned text (ASCII: clean already)."""
    return _clean_key(shown if shown.isascii() else clean_text(shown))


def _clean_key(name: str) -> str:
    words = [POSSESSIVE.sub("", w) if "'" in w else w for w in name.split()]
    return " ".join(w for w in words if w).casefold()[:MAX_NAME_CHARS]


def relation_key(owner_key: str, relation: str) -> str:
    """The key of someone's relation: "caroline's sister"."""
    return f"{owner_key}'s {relation.casefold()}"


def _kind_of(words: list[str], previous: list[str]) -> EntityKind:
    """A kind the surrounding words tell, or "unknown"."""
    lowered = {w.casefold() for w in words}
    if lowered & ORG_SUFFIXES:  # "Northwind Bank", "University of Leeds"
        return "organisation"
    if lowered & PLACE_SUFFIXES:
        return "place"
    if previous and previous[-1] in TITLES:
        return "person"
    if previous and previous[-1] in GREETINGS:
        return "person"  # a greeting names whom it greets
    if previous and previous[-1] in ("visit", "visited", "visiting"):
        return "place"
    if len(previous) >= 2 and previous[-1] in PLACE_PREPOSITIONS and previous[-2] in PLACE_VERBS:
        return "place"
    return "unknown"


def _noun_kind(noun: str) -> EntityKind:
    if noun in PET_NOUNS:
        return "pet"
    if noun in PERSON_NOUNS:
        return "person"
    if noun in PLACE_NOUNS:
        return "place"
    if noun in ORG_NOUNS:
        return "organisation"
    if noun in THING_NOUNS:
        return "thing"
    return "unknown"


def _relation_at(lows: list[str], i: int) -> tuple[str, int] | None:
    """The relation a kin phrase starting after a possessive at `i` names, and its end."""
    j = i
    qualifiers: list[str] = []
    while (
        j < len(lows)
        and j - i < 3
        and (lows[j] in DROPPED_QUALIFIERS or lows[j] in KEPT_QUALIFIERS)
    ):
        if lows[j] in KEPT_QUALIFIERS:
            qualifiers.append(lows[j])
        j += 1
    if j < len(lows) and lows[j] in RELATION_NOUNS:
        noun = RELATION_SYNONYMS.get(lows[j], lows[j])
        if noun.startswith("best ") and qualifiers == ["best"]:
            qualifiers = []
        return " ".join([*qualifiers, noun]), j + 1
    return None


def mentions(text: str, speaker: str, earlier: Sequence[Mention] = ()) -> tuple[Mention, ...]:
    """The entities `text`, said by `speaker`, names, in order, at most a bounded number;
    `earlier` the mentions of the speaker's message before it, which a name given as the
    message opens ("Her name is Marisol") may be the name of."""
    text = clean_text(text[:MAX_TEXT_CHARS])
    words = read_words(text)
    speaker_shown = " ".join(clean_text(speaker).split())[:MAX_NAME_CHARS]
    used: set[int] = set()  # words already part of a relation or naming phrase
    shouted = [i for i, w in enumerate(words.shown) if len(w) > 1 and w.isupper()]
    if len(shouted) >= SHOUTING_MIN_WORDS and len(shouted) * 2 >= len(words):
        used.update(shouted)  # capitals that shout say nothing about names
    found: list[Mention] = []
    if speaker_shown and _speaks_of_self(words.lows):
        found.append(Mention(speaker_shown, name_key(speaker_shown), "person", "speaker"))
    found.extend(_relations(words, speaker_shown, used))
    found.extend(_called(words, used))
    found.extend(_proper_names(words, used))
    found = _named_by_possessive(text, found, speaker_shown, earlier)
    found.sort(key=lambda m: m.start)
    return tuple(_dedupe(found))[:MAX_MENTIONS_PER_MESSAGE]


def _speaks_of_self(lows: list[str]) -> bool:
    """Whether a word is "I", "me", "my" ..., or a contraction of one ("I'm")."""
    return not FIRST_PERSON.isdisjoint(lows) or any(
        low.partition("'")[0] in FIRST_PERSON for low in lows if "'" in low
    )


def _relations(words: Words, speaker: str, used: set[int]) -> list[Mention]:
    """Kin and role references ("my sister", "Melanie's kids"), and the names given them."""
    found: list[Mention] = []
    text, shown, lows = words.text, words.shown, words.lows
    # Only an owner's word can open one: most words are passed over without a step each.
    owners = [i for i, word in enumerate(shown) if word.endswith("'s") or lows[i] in _OWNED_BY]
    for i in owners:
        low = lows[i]
        if low in ("my", "our") and speaker:
            owner = speaker
        elif i + 1 < len(words) and shown[i].endswith("'s") and words.is_name(i):
            owner = POSSESSIVE.sub("", shown[i])
        else:
            continue
        relation = _relation_at(lows, i + 1)
        if relation is None:
            continue
        noun, end = relation
        key = relation_key(name_key(owner), noun)
        kind = _noun_kind(noun.split()[-1])
        shown_as = f"{owner}'s {noun}"
        found.append(Mention(shown_as, key, kind, "relation", start=words.ends[i]))
        used.update(range(i + 1, end))
        # A possessive of a relation names the relation's own ("my sister's husband",
        # "Grace's brother's dog"): each link is an entity of its own, keyed by the chain.
        for _ in range(_MAX_CHAIN):
            if not shown[end - 1].endswith("'s") or (chained := _relation_at(lows, end)) is None:
                break
            noun, next_end = chained
            key, shown_as = relation_key(key, noun), f"{shown_as}'s {noun}"
            kind = _noun_kind(noun.split()[-1])
            found.append(Mention(shown_as, key, kind, "relation", start=words.ends[end - 1]))
            used.update(range(end, next_end))
            end = next_end
        name_at = _named_after(words, end)
        if name_at is None and i >= 1 and words.gap(i - 1, i).strip() == ",":
            # "Anna, my sister," or "Anna, my sister." (not "Hi Anna, my sister says hi")
            after = text[words.ends[end - 1] : words.ends[end - 1] + 2].strip()
            if words.is_name(i - 1) and after[:1] in _APPOSITION_ENDS:
                name_at = i - 1
        if name_at is not None:
            found.append(_name_mention(words, name_at, kind, key))
            used.add(name_at)
    return found


def _named_by_possessive(
    text: str, found: list[Mention], speaker: str, earlier: Sequence[Mention]
) -> list[Mention]:
    """The name a sentence gives by "her/his name is", as the alias of the one relation
    named before it that the pronoun fits ("his" is never a sister), or of the one pet the
    speaker says they have ("We got a kitten! His name's Pip": the speaker's kitten); as
    the message opens, of the one relation the speaker's message before named; else as it
    was."""
    match = _NAME_IS.search(text) if "name" in text else None
    if match is None:
        return found
    at = match.end()
    unfit = FEMALE_KIN if match["pron"].lower() == "his" else MALE_KIN
    before = {m.key: m for m in found if m.form == "relation" and m.start < at}
    if not before and match.start() == 0:
        before = {m.key: m for m in earlier if m.form == "relation"}
    if not before and speaker and (kind := owned_kind(text[: match.start()])) is not None:
        owned = Mention(
            f"{speaker}'s {kind}",
            relation_key(name_key(speaker), kind),
            _noun_kind(kind),
            "relation",
        )
        before, found = {owned.key: owned}, [*found, owned]
    if len(before) != 1:
        return found  # none named, or which of them
    (relation,) = before.values()
    if relation.key.rsplit(" ", 1)[-1] in unfit:
        return found
    return [
        Mention(m.name, m.key, relation.kind, m.form, m.weak, relation.key, m.start)
        if m.form == "name" and m.start == at
        else m
        for m in found
    ]


def _called(words: Words, used: set[int]) -> list[Mention]:
    """Names after "named"/"called"; the noun before says the kind ("a dog named Max")."""
    found: list[Mention] = []
    lows = words.lows
    if "named" not in lows and "called" not in lows:
        return found
    for i, low in enumerate(lows):
        if low not in ("named", "called") or i == 0 or i + 1 >= len(words) or i + 1 in used:
            continue
        run = [i + 1] if words.could_name(i + 1) else []
        while (
            run
            and len(run) < MAX_NAME_TOKENS
            and run[-1] + 1 < len(words)
            and words.gap(run[-1], run[-1] + 1) == " "
            and words.could_name(run[-1] + 1)
        ):
            run.append(run[-1] + 1)  # "a piece called Finding Home"
        if run:
            shown = POSSESSIVE.sub("", " ".join(words.shown[k] for k in run))
            kind = _noun_kind(lows[i - 1])
            start = words.starts[i + 1]
            found.append(Mention(shown, _shown_key(shown), kind, "name", start=start))
            used.update(run)
    return found


def _named_after(words: Words, end: int) -> int | None:
    """The word right after a kin phrase that names it: "my sister Anna", "my sister, Anna,"."""
    j = end
    if j < len(words) and words.lows[j] in ("named", "called"):
        j += 1
    if j >= len(words) or not words.could_name(j):
        return None
    gap = words.gap(j - 1, j)
    if gap.strip() == "":
        return j
    if gap.strip() == ",":
        follow = words.text[words.ends[j] : words.ends[j] + 2].strip()
        if follow[:1] in _APPOSITION_ENDS:
            return j
    return None


def _name_mention(words: Words, i: int, kind: EntityKind, alias_of: str | None) -> Mention:
    shown = POSSESSIVE.sub("", words.shown[i])
    return Mention(shown, _shown_key(shown), kind, "name", alias_of=alias_of, start=words.starts[i])


def _proper_names(words: Words, used: set[int]) -> list[Mention]:
    """Runs of capitalised words, joined by spaces or by "of"/"the" inside a name."""
    names: list[Mention] = []
    lows, written = words.lows, words.shown
    count = len(written)
    after_run = 0  # the words of a run read are not read again
    # Most words are not capitalised: only those that are are stepped through.
    for i in [i for i, word in enumerate(written) if word[0].isupper()]:
        if i < after_run or i in used or not words.is_name(i):
            continue
        run = [i]
        j = i + 1
        while j < count and j not in used:
            gap = words.gap(run[-1], j)
            if gap not in (" ",) or words.shown[run[-1]][-2:] in ("'s",):
                break
            if words.is_name(j):
                run.append(j)
                j += 1
            elif (
                lows[j] == "of"
                and lows[j + 1 : j + 2] == ["the"]
                and j + 2 < count
                and words.is_name(j + 2)
            ):
                run.extend((j, j + 1, j + 2))  # "Lord of the Rings"
                j += 3
            elif lows[j] in ("of", "de", "van", "von") and j + 1 < count and words.is_name(j + 1):
                run.extend((j, j + 1))
                j += 2
            else:
                break
        after_run = j
        if len(run) > MAX_NAME_TOKENS:
            continue  # a headline or shouting, not a name
        said = [words.shown[k] for k in run]
        said[-1] = POSSESSIVE.sub("", said[-1])
        shown = " ".join(said)
        first = run[0]
        initial = words.opens_sentence(first)
        previous = lows[max(0, first - 3) : first]
        # At a sentence's start every word is capitalised, so a name there is weak unless
        # something else vouches for it: a greeting ("Hey Mel"), a pairing with the speaker
        # ("Anthony and I went"), or a title, whose full stop ends no sentence ("Dr. Okafor").
        greeted = bool(previous) and previous[-1] in GREETINGS and not initial
        paired = lows[j : j + 2] in (["and", "i"], ["and", "me"])
        titled = bool(previous) and previous[-1] in TITLES and first > 0
        weak = initial and not greeted and not paired and not titled
        # A month name mid-sentence is still most often a date.
        if len(run) == 1 and lows[first] in MONTHS:
            if (previous and previous[-1] in DATE_CONTEXT) or _beside_number(words, first):
                continue
            weak = not greeted
        kind = _kind_of(said, previous)  # not from "and I": a dog goes for walks too
        start = words.starts[first]
        names.append(Mention(shown, _shown_key(shown), kind, "name", weak=weak, start=start))
    return names


def _beside_number(words: Words, i: int) -> bool:
    text, start, end = words.text, words.starts[i], words.ends[i]
    return bool(re.match(r"\s*\d", text[end : end + 4])) or bool(
        re.search(r"\d\s*$", text[max(0, start - 4) : start])
    )


def _dedupe(found: list[Mention]) -> list[Mention]:
    """One mention per key and form, the strongest and most specific kept."""
    best: dict[tuple[str, str], Mention] = {}
    for m in found:
        if not m.key:
            continue
        slot = (m.key, m.form)
        old = best.get(slot)
        if old is None:
            best[slot] = m
        else:
            best[slot] = Mention(
                old.name,
                old.key,
                old.kind if old.kind != "unknown" else m.kind,
                old.form,
                weak=old.weak and m.weak,
                alias_of=old.alias_of or m.alias_of,
                start=old.start,
            )
    return list(best.values())
