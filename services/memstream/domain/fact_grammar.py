"""The pieces every fact pattern is built from: clause heads, subjects, values.

A subject is "I"/"we" (group `me`), a relation of the speaker's, perhaps named ("my sister
Ana": groups `kin` and `name`), "he"/"she" (`pron`), or someone named (`named`); a value is
the group `value`. A name keeps its case inside any pattern; the rest is matched in any case.
"""

from __future__ import annotations

import re

from memstream.domain.alternation import longest_first
from memstream.domain.fact_vocabulary import KIN, PETS

# A condition, a wish or a plan states nothing yet: "if we move to Berlin", "I want a dog";
# "stopped going to the gym" is a habit ended, no plan.
_HYPOTHETICAL_WORDS = (
    "if", "would", "wish", "hope", "want", "wanna", "might", "maybe", "planning", "plan",
    "going to", "gonna", "dream", "someday", "imagine", "should", "could",
)  # fmt: skip
HYPOTHETICAL = re.compile(
    r"\b(?:"
    + "|".join(
        rf"(?<!stopped )(?<!quit ){word}" if word == "going to" else word
        for word in _HYPOTHETICAL_WORDS
    )
    + r")\b",
    re.IGNORECASE,
)


def hypothetical(sentence: str) -> re.Match[str] | None:
    """`HYPOTHETICAL.search(sentence)`. An ASCII sentence (cased as only ASCII is) holding
    none of its words as a substring is not searched: most sentences hold none."""
    if sentence.isascii():
        lowered = sentence.lower()
        if not any(word in lowered for word in _HYPOTHETICAL_WORDS):
            return None
    return HYPOTHETICAL.search(sentence)


# A clause head: start of a sentence, after a short fronted time phrase ("Since May, I..."),
# after a comma, a semicolon or a dash, or after a joining word.
_FRONTED = (
    r"(?:(?:since|for|in|over|last|this|next|about|around|a few|two|three|starting|from|as of|"
    r"after)\s[^,;]{0,30}?,?\s+)"
)
_OPENER = r"(?:(?:sadly|unfortunately|fortunately|luckily|honestly|anyway|oh|plus|finally),?\s+)"
_JOINING = r"(?:and|but|so|now|yeah|yes|well|actually|also|because|though)"
HEAD = rf"(?i:^{_OPENER}?{_FRONTED}?|[,;:]\s+|\s?[-\u2013\u2014]+\s+|\b{_JOINING}\s+)"

ADV = r"(?:(?:just|recently|finally|now|currently|still|actually|also|officially)\s+)?"
KIN_WORDS = longest_first(KIN)
# A capitalised name, in any pattern's case: "Ana", "O'Neill", "Jean-Luc", "Tomás".
NAME = r"(?-i:[A-Z][a-z\u00df-\u00ff]+(?:[A-Z][a-z]+)*(?:['-][A-Z]?[a-z\u00df-\u00ff]{2,})?)"
FIRST = r"(?P<me>I|we)"
# "my brother", "my sister Ana", "my sister, Ana,": the name, when said, is the subject.
OTHER = rf"(?P<kin>[Mm]y (?:{KIN_WORDS}))(?:,?\s+(?P<name>{NAME}),?)?"
KIN_MENTION = OTHER  # what "he"/"she" may stand for, read by the extractor
PRONOUN = r"(?P<pron>he|she)"
# "Tom moved to Leeds": someone named with no relation said; "Mom" is the speaker's mom.
# A title before the name is no part of whom it names ("Dr. Bakker retired": Bakker).
TITLE = r"(?:(?-i:Dr|Mr|Mrs|Ms|Prof)\.\s+)?"
NAMED = rf"{TITLE}(?P<named>{NAME})"
# Someone other than the speaker: a relative, "he" or "she", or a name.
SOMEONE_ELSE = rf"(?:{OTHER}|{PRONOUN}|{NAMED})"
WHO = rf"(?:{FIRST}|{SOMEONE_ELSE})"
ME_IS = r"(?:I'm|I am|Im)"
WE_ARE = r"(?:I'm|I am|Im|we're|we are)"
OTHER_IS = rf"(?:{ME_IS}|{SOMEONE_ELSE}(?:\s+is|'s))"
# A state said to hold no more, of anyone: "I'm no longer vegan", "Ellie is not keto any more",
# "my sister isn't vegetarian now".
IS_NO_LONGER = (
    rf"(?:{ME_IS}\s+{ADV}(?:no longer|not)|{SOMEONE_ELSE}"
    rf"(?:(?:\s+is|'s)\s+{ADV}(?:no longer|not)|\s+isn't))"
)
HAVE_BEEN = r"(?:'ve been| have been| has been)"
DET = r"(?:a|an|my|his|her|their|the)"
# A value runs to the next punctuation; the extractor cuts it at a word opening a new clause.
VALUE = r"(?P<value>[^,.;:!?()\"]+)"
# "our dog Biscuit": a pet kind then a capitalised name, both kept for the value check.
VALUE_PET_NAMED = r"(?P<value>(?:" + longest_first(PETS) + r")\s+(?-i:[A-Z][a-z]+))"
# Where values come as a list ("I love hiking, baking and chess"), the list runs on.
LIST = r"(?P<value>[^.;:!?()\"]+)"
# A possessive noun an open pattern makes an attribute of: "GP", "flatmate", "favourite
# band", "new phone" (new and current say when, not what).
NOUN = (
    r"(?:(?i:new|current)\s+)?"
    r"(?P<noun>(?:(?i:favou?rite|best|married|maiden|last)\s+)?(?:[a-z]+|[A-Z]{2,4}))"
)
# A proper name as a value: up to four capitalised words ("Dr Okafor", "Pixel 8"), perhaps
# after an abbreviated title, kept in the value ("Dr. Visser").
NAMED_VALUE = rf"(?P<value>{TITLE}{NAME}(?:\s+(?:{NAME}|\d+))" + r"{0,3})"
# A sentence opening with how long a state has held: "Three weeks of bouldering and I can
# barely hold a fork", "Six months into Japanese", "Five months fully plant-based". Said
# without a subject, it is the speaker's own state, and it holds when said.
DURATIVE_HEAD = (
    r"^(?i:(?:(?:about|around|almost|nearly|over)\s+)?(?:\d{1,2}|a couple of|a few|several|"
    r"an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+"
    r"(?:day|week|month|year)s?\s+)"
)
# A reply that leaves its subject out: "Yep, still a paralegal at Hartwell & Greene", "Still
# a nurse." Only at a sentence's start (after a yes or no), where it can be no one's but the
# speaker's; after a comma it may go on about whoever was just named.
ELLIPTICAL_HEAD = (
    r"^(?i:(?:(?:yep|yeah|yes|yup|nope|no|well|sadly|honestly|haha|ha),?\s+)?still\s+)"
)
NOUN_ENDS = r"(?=\s*(?:[,.;:!?)]|$|\s+(?:and|but|who|since|for|now|too|these|though)\b))"


def kin_alternation() -> str:
    """The relation words as one alternation, longest first ("little sister" before "sister")."""
    return KIN_WORDS
