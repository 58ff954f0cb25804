"""Statements whose value was named in an earlier sentence of the same message.

"So... remember the guy from the climbing gym, Tomás? We've been seeing each other since
October." "What's the right tyre pressure for a Toyota Yaris hybrid? I picked mine up on
Tuesday." The sentence that states the fact names no value ("each other", "mine"); the value
is the one the message named before it. Four such constructions of any English conversation
are read, each only where the referent is unambiguous (and a fifth, the other way round):

- *a couple said reciprocally* ("we've been seeing each other", "we're dating", "we've been
  together since May"): the partner is the one person's name said before it in the message;
- *a thing of a known make, then "mine"* ("I picked mine up", "mine arrived"): the thing is
  the one made thing the sentence before names, and it is the speaker's;
- *a name given by a pronoun* ("We adopted a dog! The shelter called him Biscuit"): the
  name of the one pet or boat the speaker said they have (adopted, got, "my dog", "our
  boat") before it in the message; its subject is that animal or thing ("Grace's dog").
  So is a renaming in one sentence ("I'm renaming the boat after Grandma: she'll be
  Solveig from now on", "we renamed our cat Miso");
- *a name given by a possessive* ("My sister is visiting. Her name is Anjali", "We adopted a
  puppy! His name's Coco"): the name of the one relation of the speaker's (of a fitting
  gender: "his" is never "my sister") or the one pet or boat the speaker has, said before it
  in the message, and nothing when both or two of either were said;
- *a pet, then "mine" named* ("What vegetables are safe for a hamster? Mine, Mochi, keeps
  stealing cucumber"): the speaker has a pet of the one kind the sentence before names;
- *a home taken, then where* ("We closed on the house! A little yellow place in Boulder
  with an actual yard."): a sentence with no verb naming a home in a place, right after the
  speaker's sentence taking a home (closed on, bought, moved into, got the keys to, signed
  the lease on), is where the speaker now lives; so is a place said alone ("Peckham since
  August.") right after the speaker says they moved without saying where ("I moved,
  remember?").

Nothing is read when the message names two candidates, or none, or when the stating sentence
is a question, a condition or a plan. Pure, standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from memstream.domain.alternation import longest_first
from memstream.domain.fact_grammar import KIN_WORDS, NAME, hypothetical
from memstream.domain.fact_kinds import kind_of
from memstream.domain.fact_values import CALENDAR_WORDS, is_name, shaped
from memstream.domain.fact_vocabulary import FEMALE_KIN, MALE_KIN, PETS
from memstream.domain.facts import value_key

# "We've been seeing each other", "we're dating", "we've been together since May" (not "we
# were together at the beach": "together" counts only with how long).
_COUPLE = re.compile(
    r"^(?:(?:so|and|well|yes|yeah|actually|honestly|anyway),?\s+)?we(?:'ve|\s+have|'re|\s+are)?"
    r"\s+(?:(?:been|started|just started|officially|now)\s+)*(?:seeing each other|dating|"
    r"going out|a couple|together(?=\s+(?:for|since)\b))\b",
    re.IGNORECASE,
)
# "I picked mine up", "Mine arrived on Monday": the speaker's, of the thing named before.
# "I ordered one this morning": having one of the thing just named is having that thing.
_MINE = re.compile(
    r"^(?:(?:and|so|well|anyway),?\s+)?(?:I\s+(?:just\s+|finally\s+)?(?:picked|got|bought|"
    r"collected|brought|ordered)\s+(?:mine|one)\b|mine\s+(?:just\s+|finally\s+)?(?:arrived|"
    r"came|was delivered|got delivered)\b)",
    re.IGNORECASE,
)
# A person's name mid-sentence, not where a place or an organisation would be; or a name
# opening a sentence as its subject ("Tom and Ana came over", "Lisbon has been great"),
# which may as well be a place's: it makes the referent ambiguous, never the referent.
_NAME_SAID = re.compile(
    rf"(?<!^)(?<![\w'])(?<!\bin )(?<!\bto )(?<!\bfrom )(?<!\bat )(?<!\bnear )(?<!\bof )"
    rf"(?P<name>{NAME}(?:\s+{NAME})?)(?![\w'])"
    rf"|^(?P<subject>{NAME})(?=\s+and\s|'s\s|\s+(?:is|was|has|had|and)\b)"
)
# A made thing with its model: "a Toyota Yaris hybrid", "an iPhone 12".
_MADE_THING = re.compile(
    r"\b(?:an?|the)\s+(?P<value>[a-z]*[A-Z][\w-]*(?:\s+(?:[A-Z][\w-]*|\d{1,4})){0,2})"
)


# A name given by a pronoun: "the shelter called him Biscuit", "we named her Luna".
_NAMED_BY_PRONOUN = re.compile(
    rf"\b(?:called|named|christened|calls|call)\s+(?:him|her|it)\s+(?P<name>{NAME})(?![\w'])"
)
# "Her name is Anjali", "his name's Bruno", opening the sentence.
_NAME_IS = re.compile(
    rf"^(?P<pron>(?i:his|her|their))\s+name(?:'s|\s+is)\s+(?P<name>{NAME})(?![\w'])"
)
_MY_KIN = re.compile(rf"\b(?i:my)\s+(?P<kin>(?i:{KIN_WORDS}))\b")
# "Mine, Mochi, keeps stealing cucumber", "Mine is called Rex", "mine's named Luna".
_MINE_NAMED = re.compile(
    rf"^(?:(?:well|and|ha|haha),?\s+)?(?i:mine)(?:,\s+(?P<name>{NAME}),|(?:'s|\s+is)\s+"
    rf"(?:called|named)\s+(?P<called>{NAME})(?![\w']))"
)
_PET_SAID = re.compile(r"\b(?P<kind>" + longest_first(PETS) + r")s?\b", re.IGNORECASE)
# Pets and things people name, said as the speaker's: "we adopted a dog", "our boat".
_NAMED_KINDS = r"(?:dog|puppy|cat|kitten|rabbit|hamster|parrot|horse|pony|boat)"
# The speaker renaming theirs: "I'm renaming the boat after Grandma: she'll be Solveig",
# "we renamed our cat Miso", "renamed the boat to Solveig".
_RENAMED = re.compile(
    rf"\b(?:I|[Ww]e)(?:'m|'re|\s+am|\s+are|'ve|\s+have)?\s+(?:just\s+|finally\s+)?"
    rf"renam(?:ed|ing)\s+(?i:the|my|our)\s+(?P<kind>(?i:{_NAMED_KINDS}))"
    rf"(?:\s+(?:to\s+)?(?P<name>{NAME})|[^.!?]*?(?:\bbe|\bto)\s+(?P<then>{NAME}))(?![\w'])"
)
_OWN_KIND = re.compile(
    rf"\b(?:(?:I|we)(?:'ve|\s+have)?\s+(?:just\s+|finally\s+)?(?:adopted|got|rescued|bought)"
    rf"\s+(?:a|an|our|my)\s+(?:[a-z-]+\s+){{0,2}}|(?:my|our)\s+(?:new\s+|little\s+)?)"
    rf"(?P<kind>{_NAMED_KINDS})\b",
    re.IGNORECASE,
)

_DWELLING = r"(?:flat|apartment|house|home|place|condo|studio|cottage|bungalow)"
# The speaker taking a home, the sentence ending there: "We closed on the house!", "I finally
# got the keys to our new flat."
_HOME_TAKEN = re.compile(
    rf"\b(?:I|we)(?:'ve|\s+have)?\s+(?:just\s+|finally\s+|officially\s+)?(?:closed\s+on|"
    rf"bought|moved\s+into|got\s+the\s+keys\s+to|signed\s+the\s+lease\s+(?:on|for))\s+"
    rf"(?:a|an|the|our|my)\s+(?:[a-z-]+\s+){{0,2}}{_DWELLING}\s*[.!]*$",
    re.IGNORECASE,
)
# A sentence with no verb naming a home in a place: "A little yellow place in Boulder with an
# actual yard." The place keeps its case.
_HOME_IN = re.compile(
    rf"^(?i:(?:a|an|our|my|the)\s+(?:[a-z-]+\s+){{0,3}}{_DWELLING}\s+in)\s+"
    rf"(?P<place>{NAME}(?:\s+{NAME}){{0,2}})(?![\w'])(?i:(?:\s+(?:with|by|near|on|and)\b[^.!?]*)?)"
    rf"[.!]*$"
)

# A move told without where: "I moved, remember?", "We finally moved!"
_MOVED_SOMEWHERE = re.compile(
    r"\b(?:I|we)(?:'ve|\s+have)?\s+(?:just\s+|finally\s+|recently\s+)?moved\b"
    r"(?!\s+(?:to|into|in|from|out|back|on|over|up|house|home|the|my|our|a|an|his|her)\b)",
    re.IGNORECASE,
)
# A place said alone, perhaps with since when: "Peckham since August, the cat hates stairs."
_PLACE_ALONE = re.compile(
    rf"^(?P<place>{NAME}(?:\s+{NAME}){{0,2}})(?![\w'])(?i:\s+(?:since|from)\s+[^,.!?]+|\s+now)?"
    rf"\s*(?:[,.!]|$)"
)

_KIND_SAID = re.compile(rf"\b{_NAMED_KINDS}s?\b", re.IGNORECASE)


# Words one of which every message these constructions read holds (lower case): a message
# without any is not split into sentences again (the segmenter reads every L1 on the event
# loop, and a substring test is far cheaper than any regular expression over the message).
_TRIGGERS = ("mine", "call", "name", "renam", "christen", "each other", "dating", "going out",
             "couple", "together", "ordered one", "bought one", "got one", "picked one",
             "collected one", "closed on", "bought", "moved", "keys", "lease")  # fmt: skip


def may_refer(text: str) -> bool:
    """Whether the message may hold one of these constructions."""
    lowered = text.lower()
    return any(word in lowered for word in _TRIGGERS)


@dataclass(frozen=True, slots=True)
class Referred:
    """A fact whose value an earlier sentence named: of the speaker, or of what `of` names
    of theirs ("dog": the speaker's dog)."""

    attribute: str  # "partner", "name", or the slot of a thing's kind ("car", "phone")
    value: str
    sentence: str  # the stating sentence: its time phrase dates the fact
    of: str | None = None


def referred_facts(
    sentences: Sequence[str], speaker: str, earlier: Sequence[str] = ()
) -> Iterator[Referred]:
    """What the message's sentences (in order) state of the speaker by a value named before.
    A name given by a pronoun or a possessive opening the message ("Her name is Marisol")
    refers to what the speaker's message before it (`earlier`, its sentences) named."""
    for index, sentence in enumerate(sentences):
        if sentence.endswith("?") or hypothetical(sentence):
            continue
        renamed = _RENAMED.search(sentence)
        if renamed is not None:  # the one construction naming its referent itself
            name = renamed["name"] or renamed["then"]
            if is_name([name]):
                yield Referred("name", name, sentence, of=renamed["kind"].lower())
            continue
        said_before = sentences[:index] or earlier
        if not said_before:
            continue
        named = _NAMED_BY_PRONOUN.search(sentence)
        given = _NAME_IS.match(sentence)
        if given is not None:
            referent = _one_named(said_before, given["pron"].lower())
            if referent is not None and is_name([given["name"]]):
                attribute, of = referent
                yield Referred(attribute, given["name"], sentence, of=of)
        elif named is not None:
            kind = _one_kind_owned([*said_before, sentence[: named.start()]])
            if kind is not None and is_name([named["name"]]):
                yield Referred("name", named["name"], sentence, of=kind)
        elif not index:
            continue  # the constructions below refer within the message only
        elif _COUPLE.search(sentence):
            partner = _one_person(sentences[:index], speaker)
            if partner is not None:
                yield Referred("partner", partner, sentence)
        elif (alone := _moved_to_place(sentences[index - 1], sentence)) is not None:
            yield Referred("lives_in", alone, sentence)
        elif (home := _HOME_IN.match(sentence)) is not None:
            if _HOME_TAKEN.search(sentences[index - 1]) and shaped("place", home["place"]):
                yield Referred("lives_in", home["place"], sentence)
        elif (mine := _MINE_NAMED.search(sentence)) is not None:
            pet = _one_pet(sentences[index - 1])
            name = mine["name"] or mine["called"]
            if pet is not None and is_name([name]):
                yield Referred("pet", f"{pet} named {name}", sentence)
        elif _MINE.search(sentence):
            thing = _one_made_thing(sentences[index - 1])
            if thing is not None:
                kind = kind_of(thing)
                if kind is not None:
                    yield Referred(kind, thing, sentence)


def owned_kind(text: str) -> str | None:
    """The one pet or thing `text` says the speaker has ("We got a kitten": kitten)."""
    return _one_kind_owned([text])


def _moved_to_place(before: str, sentence: str) -> str | None:
    """The place said alone in `sentence` right after a move told without where."""
    alone = _PLACE_ALONE.match(sentence)
    if alone is None or _MOVED_SOMEWHERE.search(before) is None:
        return None
    place = alone["place"]
    if place.split()[0] in CALENDAR_WORDS or place.lower() == "mine":
        return None
    return shaped("place", place)


def _one_person(sentences: Sequence[str], speaker: str) -> str | None:
    """The one name said in these sentences that may be a person's, other than the speaker;
    None when another name opens a sentence as its subject."""
    found: dict[str, str | None] = {}
    for sentence in sentences:
        for match in _NAME_SAID.finditer(sentence):
            name = match["name"] or match["subject"]
            if value_key(name) == value_key(speaker) or not is_name(name.split()):
                continue
            kept = shaped("name", name)
            if kept is not None:
                found.setdefault(value_key(kept), kept if match["name"] else None)
    return next(iter(found.values())) if len(found) == 1 else None


def _one_named(sentences: Sequence[str], pronoun: str) -> tuple[str, str | None] | None:
    """Whom "her/his/their name is" names: the one relation of the speaker's said in these
    sentences that the pronoun fits (the relation's slot: "sister"), or the one pet or boat
    the speaker has ("name" of it); None when there are several, or both, or none."""
    unfit = FEMALE_KIN if pronoun == "his" else MALE_KIN if pronoun == "her" else frozenset()
    kin = {
        relation
        for sentence in sentences
        for match in _MY_KIN.finditer(sentence)
        if (relation := " ".join(match["kin"].lower().split())) not in unfit
    }
    # Any pet said counts, the speaker's or not: "My sister got a puppy. Her name is Coco".
    pets = any(_PET_SAID.search(sentence) for sentence in sentences)
    kind = _one_kind_owned(sentences)
    if kind is not None and not kin:
        return "name", kind
    if len(kin) == 1 and not pets and kind is None:
        return "_".join(kin.pop().split()), None
    return None


def _one_made_thing(sentence: str) -> str | None:
    """The one thing of a known make the sentence names ("a Toyota Yaris hybrid")."""
    things = {
        value_key(kept): kept
        for match in _MADE_THING.finditer(sentence)
        if (kept := shaped("make", match["value"])) is not None and kind_of(kept) is not None
    }
    return next(iter(things.values())) if len(things) == 1 else None


def _one_kind_owned(sentences: Sequence[str]) -> str | None:
    """The one pet or thing these sentences say the speaker has ("dog"); None when they name
    another as well ("we got a cat and a dog", "our dog met a dog at the park")."""
    owned = [m["kind"].lower() for t in sentences for m in _OWN_KIND.finditer(t)]
    said = [m.group(0) for t in sentences for m in _KIND_SAID.finditer(t)]
    return owned[0] if len(owned) == len(said) == 1 else None


def _one_pet(sentence: str) -> str | None:
    """The one kind of pet the sentence names ("a hamster"), if it names one kind."""
    kinds = {m["kind"].lower() for m in _PET_SAID.finditer(sentence)}
    return kinds.pop() if len(kinds) == 1 else None
