"""The words the entity rules read: what is never a name, and what tells a mention's kind.

General English, not fitted to one dataset: a word belongs here because it is capitalised
for reasons other than naming (pronouns, greetings, calendar words), or because it says
what kind of thing the name beside it is ("my sister", "a dog named", "University of").
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})

# Capitalised in chat for reasons other than naming: pronouns, determiners, conjunctions,
# auxiliaries, wh-words, greetings and interjections. Dropped wherever they stand.
NOT_NAMES = _words(
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
TITLES = _words("mr mrs ms miss dr prof sir")
GREETINGS = _words("hey hi hello hiya heya yo dear thanks thank bye goodbye congrats")
WEEKDAYS = _words(
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thurs fri"
)
MONTHS = _words(
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
DATE_CONTEXT = _words(
    "in on since until till by of early late mid last next this every during through"
)

PERSON_NOUNS = _words(
    """mother mom mum mama mommy father dad papa daddy parents sister sis brother bro
    sibling siblings son daughter kid kids child children baby husband wife partner
    boyfriend girlfriend fiance fiancee spouse grandma grandmother granny grandpa
    grandfather grandparents aunt uncle cousin niece nephew friend bestie buddy pal
    roommate neighbor neighbour boss manager coworker co-worker colleague mentor teacher
    coach therapist doctor student students team teammate family guy girl man woman
    lady boy in-laws fam hubby wifey bf gf bff"""
)
PET_NOUNS = _words(
    """dog dogs puppy pup cat cats kitten kitty pet pets horse pony bird parrot hamster
    rabbit bunny fish turtle tortoise snake lizard guinea"""
)
PLACE_NOUNS = _words("town city village place country island lake beach park street")
ORG_NOUNS = _words("company firm band club group team school shop store cafe restaurant")
THING_NOUNS = _words("book novel song album movie film show game painting app")
# Informal words for the same relation share its key ("my mum" is "my mom").
RELATION_SYNONYMS = {
    "mum": "mom",
    "mama": "mom",
    "mommy": "mom",
    "mother": "mom",
    "papa": "dad",
    "daddy": "dad",
    "father": "dad",
    "sis": "sister",
    "bro": "brother",
    "fam": "family",
    "hubby": "husband",
    "wifey": "wife",
    "bf": "boyfriend",
    "gf": "girlfriend",
    "bestie": "best friend",
    "bff": "best friend",
    "kitty": "cat",
    "pup": "puppy",
}
RELATION_NOUNS = PERSON_NOUNS | PET_NOUNS
# Qualifiers that make a different relation ("best friend" is not every friend).
KEPT_QUALIFIERS = frozenset({"best", "ex"})
DROPPED_QUALIFIERS = _words(
    "little big older younger old new dear late baby twin sweet lovely fur four-legged"
)
PLACE_SUFFIXES = _words(
    "city park street st avenue ave road lake river mountain mountains beach island county"
)
ORG_SUFFIXES = _words(
    """inc corp company co ltd llc university college school academy institute club church
    hospital bank foundation association society center centre agency"""
)
# Verbs of going and staying, then a preposition: "moved to Berlin", "lives in Porto". A bare
# "in" or "to" precedes books ("in Harry Potter") and people ("talked to Max") as often.
PLACE_VERBS = _words(
    """live lives lived living based born moved move moving went go goes going trip travel
    traveled travelled flew fly vacation holiday stayed staying stay road back arrived
    was were been am is are"""
)
PLACE_PREPOSITIONS = _words("in to from near around across through")
