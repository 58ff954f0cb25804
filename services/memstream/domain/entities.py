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
from dataclasses import dataclass
from typing import Literal


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


EntityKind = Literal["person", "pet", "place", "organisation", "thing", "unknown"]
MentionForm = Literal["name", "relation", "speaker"]

# Bounds that keep hostile text (a 10,000-character "name", a wall of capitals) from
# becoming entities: longer tokens are not names, longer runs are headlines or shouting.
MAX_TOKEN_CHARS = 30
MAX_NAME_TOKENS = 4
MAX_NAME_CHARS = 80
MAX_MENTIONS_PER_MESSAGE = 64
# A message with at least this many words in capitals, half its words or more, shouts.
SHOUTING_MIN_WORDS = 3

FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})

# Capitalised in chat for reasons other than naming: pronouns, determiners, conjunctions,
# auxiliaries, wh-words, greetings and interjections. Dropped wherever they stand.
_NOT_NAMES = _words(
    """i i'm i've i'd i'll im ive a an the this that these those there here it its it's
    he she we they you your yours his her hers our ours their theirs my me him them us
    and or but so because if when while then than as of in on at to for from by with
    about into over after before since until is are was were be been being am do does did
    have has had will would can could should shall might must may not no yes yeah yep yup
    nope ok okay what which who whom whose where why how all any some each every both
    either neither just also too very really well oh ooh wow hey hi hello hiya heya yo
    thanks thank thx bye goodbye cheers congrats congratulations sorry please lol haha
    hahaha omg aw aww awww ah ahh hmm um uh huh sure cool great nice good glad dear mr
    mrs ms dr mom's let let's lets btw tbh imo imho fyi idk brb asap ty omw"""
)
_TITLES = _words("mr mrs ms miss dr prof sir")
_GREETINGS = _words("hey hi hello hiya heya yo dear thanks thank bye goodbye congrats")
_WEEKDAYS = _words(
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thurs fri"
)
_MONTHS = _words(
    """january february march april may june july august september october november
    december jan feb mar apr jun jul aug sep sept oct nov dec"""
)
# Given names that are also ordinary English words: a name only mid-sentence, or where
# the index has seen them as names.
COMMON_WORD_NAMES = _words(
    """will bill may june april august grace hope joy faith rose lily iris dawn summer
    autumn mark frank pat sue art jack rob bob ruby amber sky crystal honey buddy"""
)
# Words that put a month name in a date ("in May", "May 5"), not a person.
_DATE_CONTEXT = _words(
    "in on since until till by of early late mid last next this every during through"
)

_PERSON_NOUNS = _words(
    """mother mom mum mama mommy father dad papa daddy parents sister sis brother bro
    sibling siblings son daughter kid kids child children baby husband wife partner
    boyfriend girlfriend fiance fiancee spouse grandma grandmother granny grandpa
    grandfather grandparents aunt uncle cousin niece nephew friend bestie buddy pal
    roommate neighbor neighbour boss manager coworker co-worker colleague mentor teacher
    coach therapist doctor student students team teammate family guy girl man woman
    lady boy in-laws"""
)
_PET_NOUNS = _words(
    """dog dogs puppy pup cat cats kitten kitty pet pets horse pony bird parrot hamster
    rabbit bunny fish turtle tortoise snake lizard guinea"""
)
_PLACE_NOUNS = _words("town city village place country island lake beach park street")
_ORG_NOUNS = _words("company firm band club group team school shop store cafe restaurant")
_THING_NOUNS = _words("book novel song album movie film show game painting app")
_RELATION_NOUNS = _PERSON_NOUNS | _PET_NOUNS
# Qualifiers that make a different relation ("best friend" is not every friend).
_KEPT_QUALIFIERS = frozenset({"best", "ex"})
_DROPPED_QUALIFIERS = _words(
    "little big older younger old new dear late baby twin sweet lovely fur four-legged"
)
_PLACE_SUFFIXES = _words(
    "city park street st avenue ave road lake river mountain mountains beach island county"
)
_ORG_SUFFIXES = _words(
    """inc corp company co ltd llc university college school academy institute club church
    hospital bank foundation association society center centre agency"""
)
# Verbs of going and staying, then a preposition: "moved to Berlin", "lives in Porto". A bare
# "in" or "to" precedes books ("in Harry Potter") and people ("talked to Max") as often.
_PLACE_VERBS = _words(
    """live lives lived living based born moved move moving went go goes going trip travel
    traveled travelled flew fly vacation holiday stayed staying stay road back arrived
    was were been am is are"""
)
_PLACE_PREPOSITIONS = _words("in to from near around across through")

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_TAG = re.compile(r"<[^<>]{0,200}>|&[a-zA-Z]{2,8};")
_TOKEN = re.compile(r"[^\W\d_](?:[^\W_]|['-](?=[^\W\d_]))*")
_POSSESSIVE = re.compile(r"'s?$", re.IGNORECASE)
_REPEATS = re.compile(r"(.)\1{2,}")


@dataclass(frozen=True, slots=True)
class Mention:
    """One entity a message names: a name, a relation of someone, or the speaker."""

    name: str  # as shown: "Melanie", "my sister", the speaker's name
    key: str  # normalised: "melanie", "caroline's sister"
    kind: EntityKind
    form: MentionForm
    weak: bool = False  # only capitalisation vouches for it: kept where known elsewhere
    alias_of: str | None = None  # a relation key this name was given ("my sister Anna")
    start: int = 0  # where in the cleaned text it begins (the speaker: 0)


def clean_text(text: str) -> str:
    """The text without markup, control characters or compatibility forms."""
    text = _TAG.sub(" ", unicodedata.normalize("NFKC", text).translate(_QUOTES))
    return "".join(
        ch if not unicodedata.category(ch).startswith("C") else ("\n" if ch in "\r\n" else " ")
        for ch in text
    )


def name_key(name: str) -> str:
    """The normalised key of a name: case-folded, possessive and extra spaces removed."""
    words = [_POSSESSIVE.sub("", w) for w in clean_text(name).split()]
    return " ".join(w for w in words if w).casefold()[:MAX_NAME_CHARS]


def relation_key(owner_key: str, relation: str) -> str:
    """The key of someone's relation: "caroline's sister"."""
    return f"{owner_key}'s {relation.casefold()}"


@dataclass(frozen=True, slots=True)
class _Token:
    text: str
    start: int
    end: int
    initial: bool  # first word of a sentence

    @property
    def low(self) -> str:
        return _POSSESSIVE.sub("", self.text).casefold()

    @property
    def capitalised(self) -> bool:
        # One letter is an initial or a fragment ("U.S."), too little to tell a name by.
        return self.text[0].isupper() and 2 <= len(self.text) <= MAX_TOKEN_CHARS


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    for match in _TOKEN.finditer(text):
        before = text[: match.start()].rstrip(" \t\"'([{*_")
        last = before[-1:] if before else ""
        # Emoji and other symbols end a chat sentence as often as a full stop does.
        initial = not last or last in ".!?:;…-\u2013\u2014\n" or unicodedata.category(last) == "So"
        tokens.append(_Token(match.group(), match.start(), match.end(), initial))
    return tokens


def _is_name_token(token: _Token) -> bool:
    low = token.low
    return (
        token.capitalised
        # "Will"/"May" open questions; mid-sentence and capitalised they are names.
        and (low not in _NOT_NAMES or (low in COMMON_WORD_NAMES and not token.initial))
        and low not in _WEEKDAYS
        and (low not in _MONTHS or low in COMMON_WORD_NAMES)
        and (
            _REPEATS.sub(r"\1", low) == low or _REPEATS.sub(r"\1", low) not in _NOT_NAMES
        )  # "Heyyy"
    )


def _could_name(token: _Token) -> bool:
    """Whether a token can be a name where the words before say it is one ("named Friday")."""
    return token.capitalised and (token.low not in _NOT_NAMES or token.low in COMMON_WORD_NAMES)


def _gap(text: str, left: _Token, right: _Token) -> str:
    return text[left.end : right.start]


def _kind_of(words: list[str], previous: list[str]) -> EntityKind:
    """A kind the surrounding words tell, or "unknown"."""
    lowered = {w.casefold() for w in words}
    if lowered & _ORG_SUFFIXES:  # "Northwind Bank", "University of Leeds"
        return "organisation"
    if lowered & _PLACE_SUFFIXES:
        return "place"
    if previous and previous[-1] in _TITLES:
        return "person"
    if previous and previous[-1] in _GREETINGS:
        return "person"  # a greeting names whom it greets
    if previous and previous[-1] in ("visit", "visited", "visiting"):
        return "place"
    if len(previous) >= 2 and previous[-1] in _PLACE_PREPOSITIONS and previous[-2] in _PLACE_VERBS:
        return "place"
    return "unknown"


def _noun_kind(noun: str) -> EntityKind:
    if noun in _PET_NOUNS:
        return "pet"
    if noun in _PERSON_NOUNS:
        return "person"
    if noun in _PLACE_NOUNS:
        return "place"
    if noun in _ORG_NOUNS:
        return "organisation"
    if noun in _THING_NOUNS:
        return "thing"
    return "unknown"


def _relation_at(lows: list[str], i: int) -> tuple[str, int] | None:
    """The relation a kin phrase starting after a possessive at `i` names, and its end."""
    j = i
    qualifiers: list[str] = []
    while (
        j < len(lows)
        and j - i < 3
        and (lows[j] in _DROPPED_QUALIFIERS or lows[j] in _KEPT_QUALIFIERS)
    ):
        if lows[j] in _KEPT_QUALIFIERS:
            qualifiers.append(lows[j])
        j += 1
    if j < len(lows) and lows[j] in _RELATION_NOUNS:
        return " ".join([*qualifiers, lows[j]]), j + 1
    return None


def mentions(text: str, speaker: str) -> tuple[Mention, ...]:
    """The entities `text`, said by `speaker`, names, in order, at most a bounded number."""
    text = clean_text(text)
    tokens = _tokens(text)
    lows = [t.low for t in tokens]
    speaker_key = name_key(speaker)
    found: list[Mention] = []
    used: set[int] = set()  # tokens already part of a relation or naming phrase
    shouted = [i for i, t in enumerate(tokens) if len(t.text) > 1 and t.text.isupper()]
    if len(shouted) >= SHOUTING_MIN_WORDS and len(shouted) * 2 >= len(tokens):
        used.update(shouted)  # capitals that shout say nothing about names

    if speaker_key and any(t.text.casefold().split("'")[0] in FIRST_PERSON for t in tokens):
        found.append(Mention(speaker.strip()[:MAX_NAME_CHARS], speaker_key, "person", "speaker"))

    for i, low in enumerate(lows):
        owner: str | None = None
        if low in ("my", "our") and speaker_key:
            owner = speaker_key
        elif i + 1 < len(tokens) and tokens[i].text[-2:] in ("'s",) and _is_name_token(tokens[i]):
            owner = name_key(tokens[i].text)
        if owner is None:
            continue
        relation = _relation_at(lows, i + 1)
        if relation is None:
            continue
        noun, end = relation
        key = relation_key(owner, noun)
        owner_shown = (
            speaker.strip() if low in ("my", "our") else _POSSESSIVE.sub("", tokens[i].text)
        )
        shown = f"{owner_shown[:MAX_NAME_CHARS]}'s {noun}"
        found.append(
            Mention(shown, key, _noun_kind(noun.split()[-1]), "relation", start=tokens[i].end)
        )
        used.update(range(i + 1, end))
        name_at = _named_after(text, tokens, end)
        if name_at is not None:
            found.append(_name_mention(tokens[name_at], _noun_kind(noun.split()[-1]), key))
            used.add(name_at)
        elif (
            i >= 1
            and text[tokens[i - 1].end : tokens[i].start].strip() == ","
            and _is_name_token(tokens[i - 1])
        ):
            # "Anna, my sister," or "Anna, my sister." (not "Hi Anna, my sister says hi")
            after = text[tokens[end - 1].end : tokens[end - 1].end + 2].strip()
            if after[:1] in (",", ".", "!", "?", ";", ")", ""):
                found.append(_name_mention(tokens[i - 1], _noun_kind(noun.split()[-1]), key))
                used.add(i - 1)

    for i, low in enumerate(lows):
        # "a dog named Max", "a band called Queen": the noun before says the kind
        if low in ("named", "called") and i + 1 < len(tokens) and i + 1 not in used and i >= 1:
            run = [i + 1] if _could_name(tokens[i + 1]) else []
            while (
                run
                and len(run) < MAX_NAME_TOKENS
                and run[-1] + 1 < len(tokens)
                and _gap(text, tokens[run[-1]], tokens[run[-1] + 1]) == " "
                and _could_name(tokens[run[-1] + 1])
            ):
                run.append(run[-1] + 1)  # "a piece called Finding Home"
            if run:
                shown = _POSSESSIVE.sub("", " ".join(tokens[k].text for k in run))
                kind = _noun_kind(lows[i - 1])
                found.append(
                    Mention(shown, name_key(shown), kind, "name", start=tokens[i + 1].start)
                )
                used.update(run)

    found.extend(_proper_names(text, tokens, lows, used))
    found.sort(key=lambda m: m.start)
    return tuple(_dedupe(found))[:MAX_MENTIONS_PER_MESSAGE]


def _named_after(text: str, tokens: list[_Token], end: int) -> int | None:
    """The token right after a kin phrase that names it: "my sister Anna", "my sister, Anna,"."""
    j = end
    if j < len(tokens) and tokens[j].low in ("named", "called"):
        j += 1
    if j >= len(tokens) or not _could_name(tokens[j]):
        return None
    gap = _gap(text, tokens[j - 1], tokens[j])
    if gap.strip() == "":
        return j
    if gap.strip() == ",":
        follow = text[tokens[j].end : tokens[j].end + 2].strip()
        if follow[:1] in (",", ".", "!", "?", ";", ")", ""):
            return j
    return None


def _name_mention(token: _Token, kind: EntityKind, alias_of: str | None) -> Mention:
    shown = _POSSESSIVE.sub("", token.text)
    return Mention(shown, name_key(shown), kind, "name", alias_of=alias_of, start=token.start)


def _proper_names(
    text: str, tokens: list[_Token], lows: list[str], used: set[int]
) -> list[Mention]:
    """Runs of capitalised tokens, joined by spaces or by "of"/"the" inside a name."""
    names: list[Mention] = []
    i = 0
    while i < len(tokens):
        if i in used or not _is_name_token(tokens[i]):
            i += 1
            continue
        run = [i]
        j = i + 1
        while j < len(tokens) and j not in used:
            gap = _gap(text, tokens[run[-1]], tokens[j])
            if gap not in (" ",) or tokens[run[-1]].text[-2:] in ("'s",):
                break
            if _is_name_token(tokens[j]):
                run.append(j)
                j += 1
            elif (
                lows[j] == "of"
                and lows[j + 1 : j + 2] == ["the"]
                and j + 2 < len(tokens)
                and _is_name_token(tokens[j + 2])
            ):
                run.extend((j, j + 1, j + 2))  # "Lord of the Rings"
                j += 3
            elif (
                lows[j] in ("of", "de", "van", "von")
                and j + 1 < len(tokens)
                and _is_name_token(tokens[j + 1])
            ):
                run.extend((j, j + 1))
                j += 2
            else:
                break
        i = j
        if len(run) > MAX_NAME_TOKENS:
            continue  # a headline or shouting, not a name
        words = [tokens[k].text for k in run]
        words[-1] = _POSSESSIVE.sub("", words[-1])
        shown = " ".join(words)
        first = tokens[run[0]]
        previous = lows[max(0, run[0] - 3) : run[0]]
        greeted = bool(previous) and previous[-1] in _GREETINGS and not first.initial
        # At a sentence's start every word is capitalised; a month name mid-sentence is
        # still most often a date. A greeting vouches for the name it greets.
        # "Anthony and I went": one person beside the speaker, wherever the sentence starts.
        paired = lows[j : j + 2] in (["and", "i"], ["and", "me"])
        # "Dr. Okafor": the full stop after a title does not end a sentence.
        titled = bool(previous) and previous[-1] in _TITLES and run[0] > 0
        weak = first.initial and not greeted and not paired and not titled
        if len(run) == 1 and first.low in _MONTHS:
            if (previous and previous[-1] in _DATE_CONTEXT) or _beside_number(text, first):
                continue
            weak = not greeted
        kind = "person" if paired else _kind_of(words, previous)
        names.append(Mention(shown, name_key(shown), kind, "name", weak=weak, start=first.start))
    return names


def _beside_number(text: str, token: _Token) -> bool:
    return bool(re.match(r"\s*\d", text[token.end : token.end + 4])) or bool(
        re.search(r"\d\s*$", text[max(0, token.start - 4) : token.start])
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
