"""The English statement patterns offline fact extraction reads: one row per way of saying.

A pattern matches a subject at the head of a clause ("I", "we", "my brother"), a verb
phrase, and a value; `shape` names what the value must look like for the slot, and the
extractor checks it. A place keeps its case (a place is a capitalised name); everything
else is matched in any case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memstream.domain.fact_vocabulary import KIN, PETS
from memstream.domain.facts import Certainty

# A clause head: start of a sentence, after a short fronted time phrase ("Since May, I..."),
# after a comma, a semicolon or a dash, or after a joining word.
_FRONTED = r"(?:(?:since|for|in|over|last|this|about|around|a few|two|three)\s[^,;]{0,30}?,?\s+)"
_OPENER = r"(?:(?:sadly|unfortunately|fortunately|luckily|honestly|anyway|oh|plus|finally),?\s+)"
_JOINING = r"(?:and|but|so|now|yeah|yes|well|actually|also|because|though)"
HEAD = rf"(?i:^{_OPENER}?{_FRONTED}?|[,;:]\s+|\s[-\u2013\u2014]+\s+|\b{_JOINING}\s+)"

_ADV = r"(?:(?:just|recently|finally|now|currently|still|actually|also|officially)\s+)?"
_KIN = "|".join(sorted(KIN, key=len, reverse=True))
_FIRST = r"(?P<me>I|we)"
_OTHER = rf"(?P<kin>[Mm]y (?:{_KIN}))"
_WHO = rf"(?:{_FIRST}|{_OTHER})"
_ME_IS = r"(?:I'm|I am|Im)"
_WE_ARE = r"(?:I'm|I am|Im|we're|we are)"
_OTHER_IS = rf"(?:{_ME_IS}|{_OTHER}(?:\s+is|'s))"
_HAVE_BEEN = r"(?:'ve been| have been| has been)"
_DET = r"(?:a|an|my|his|her|their|the)"
# A value runs to the next punctuation; the extractor cuts it at a word opening a new clause.
VALUE = r"(?P<value>[^,.;:!?()\"]+)"
# "our dog Biscuit": a pet kind then a capitalised name, both kept for the value check.
VALUE_PET_NAMED = (
    r"(?P<value>(?:" + "|".join(sorted(PETS, key=len, reverse=True)) + r")\s+(?-i:[A-Z][a-z]+))"
)
# Where values come as a list ("I love hiking, baking and chess"), the list runs on.
LIST = r"(?P<value>[^.;:!?()\"]+)"


@dataclass(frozen=True, slots=True)
class Pattern:
    attribute: str
    regex: re.Pattern[str]
    shape: str  # place, org, job, diet, pet, good, activity, hobby, subject, fixed
    negated: bool = False
    certainty: Certainty = "stated"
    fixed: str | None = None  # the value when the words are it ("got married": married)


def _p(
    attribute: str,
    pattern: str,
    shape: str,
    *,
    negated: bool = False,
    certainty: Certainty = "stated",
    fixed: str | None = None,
    anywhere: bool = False,
) -> Pattern:
    flags = 0 if shape == "place" else re.IGNORECASE
    regex = re.compile(("" if anywhere else HEAD) + pattern, flags)
    return Pattern(attribute, regex, shape, negated, certainty, fixed)


def _i(pattern: str) -> str:
    """Case-insensitive words inside a case-sensitive (place) pattern."""
    return f"(?i:{pattern})"


_NO_LONGER = r"(?:no longer|don't|doesn't|do not|does not)"
_LIVE_NOW = r"(?:live|lives|living|based)"
_MOVED = rf"(?:'ve|\s+have|\s+has)?\s+{_ADV}moved\s+(?:back\s+)?(?:from\s+[^,.;!?]+?\s+)?to"
_WORK = r"(?:work|works|working)"
_LOVE = r"(?:really\s+|absolutely\s+)?(?:love|enjoy|like|adore)"
_TOOK_UP = r"(?:took up|taken up|picked up|started|began|got into|gotten into)"
_WENT = r"(?:went|gone|became|become|turned)"
_PARTED_WITH = r"(?:had to\s+)?(?:no longer have|don't have|gave away|give away|rehomed?|lost)"
_BE_ROLE = r"(?:'m|\s+am|\s+is|'s|'ve been|\s+have been|\s+has been|\s+been)?"

PATTERNS: tuple[Pattern, ...] = (
    # Where someone lives: a capitalised place.
    _p("lives_in", _i(rf"{_WHO}\s+{_ADV}(?:used to live|lived)\s+in") + rf"\s+{VALUE}",
       "place", negated=True),
    _p("lives_in", _i(rf"{_WHO}\s+{_ADV}{_NO_LONGER}\s+lives?\s+in") + rf"\s+{VALUE}",
       "place", negated=True),
    _p("lives_in", _i(rf"{_WHO}{_BE_ROLE}(?:'re|\s+are)?\s+{_ADV}{_LIVE_NOW}\s+in")
       + rf"\s+{VALUE}", "place"),
    _p("lives_in", _i(rf"{_WHO}{_MOVED}") + rf"\s+{VALUE}", "place"),
    # "I've lived in Madrid" alone may be one stop of many; with "for"/"since" it holds now.
    _p("lives_in", _i(rf"{_WHO}(?:'ve|\s+have|\s+has)\s+{_ADV}lived\s+in") + rf"\s+{VALUE}"
       + _i(r"(?=\s+(?:for|since)\b)"), "place"),
    _p("lives_in", _i(rf"{_WHO}\s+{_ADV}relocated\s+to") + rf"\s+{VALUE}", "place"),
    # Where someone works, and as what.
    _p("works_at", rf"{_WHO}\s+{_ADV}(?:used to work|worked)\s+(?:at|for)\s+{VALUE}",
       "org", negated=True),
    _p("works_at", rf"{_WHO}\s+{_ADV}{_NO_LONGER}\s+works?\s+(?:at|for)\s+{VALUE}",
       "org", negated=True),
    _p("works_at", rf"{_WHO}\s+{_ADV}(?:quit|left|lost)\s+{_DET}\s+job\s+(?:at|with)\s+{VALUE}",
       "org", negated=True),
    _p("works_at", rf"{_WHO}{_BE_ROLE}\s+{_ADV}{_WORK}\s+(?:at|for)\s+{VALUE}", "org"),
    _p("works_at", rf"{_WHO}\s+{_ADV}(?:got|started|landed|took)\s+{_DET}\s+(?:new\s+)?"
       rf"(?:job|position|role)\s+(?:at|with)\s+{VALUE}", "org"),
    _p("job", rf"{_WHO}(?:'m|\s+am|\s+is|'s)?\s+{_ADV}(?:no longer|not)\s+an?\s+{VALUE}",
       "job", negated=True),
    _p("job", rf"{_WHO}\s+{_ADV}used to be\s+an?\s+{VALUE}", "job", negated=True),
    _p("job", rf"{_OTHER_IS}\s+{_ADV}an?\s+{VALUE}", "job"),
    _p("job", rf"{_WHO}{_HAVE_BEEN}?\s+{_ADV}(?:{_WORK}|started|start|began)\s+(?:out\s+)?"
       rf"as\s+an?\s+{VALUE}", "job"),
    _p("job", rf"{_WHO}\s+{_ADV}became\s+an?\s+{VALUE}", "job"),
    # Relationship status: said outright, or implied by naming a spouse or partner.
    _p("relationship", rf"{_FIRST}\s+{_ADV}got married\b", "fixed", fixed="married"),
    _p("relationship", rf"{_WE_ARE}\s+{_ADV}married\b", "fixed", fixed="married"),
    _p("relationship", rf"{_FIRST}\s+{_ADV}got engaged\b", "fixed", fixed="engaged"),
    _p("relationship", rf"{_WE_ARE}\s+{_ADV}engaged\b", "fixed", fixed="engaged"),
    _p("relationship", rf"(?:{_ME_IS}|{_FIRST}\s+got)\s+{_ADV}divorced\b", "fixed",
       fixed="divorced"),
    _p("relationship", rf"(?:{_ME_IS}|I{_HAVE_BEEN})\s+{_ADV}single\b", "fixed", fixed="single"),
    _p("relationship", r"(?<![\w-])(?:my|our)\s+(?:husband|wife|spouse)\b", "fixed",
       fixed="married", certainty="implied", anywhere=True),
    _p("relationship", r"(?<![\w-])my\s+(?:boyfriend|girlfriend|fiance|fiancee)\b", "fixed",
       fixed="in a relationship", certainty="implied", anywhere=True),
    # Diet.
    _p("diet", rf"{_ME_IS}\s+{_ADV}(?:no longer|not)\s+(?:an?\s+)?{VALUE}", "diet",
       negated=True),
    _p("diet", rf"{_FIRST}\s+{_ADV}(?:used to be|stopped being|gave up being)\s+(?:an?\s+)?"
       rf"{VALUE}", "diet", negated=True),
    _p("diet", rf"(?:{_ME_IS}|I{_HAVE_BEEN}|{_FIRST}(?:'ve|\s+have)?\s+{_ADV}{_WENT})\s+{_ADV}"
       rf"(?:an?\s+)?{VALUE}", "diet"),
    # Pets and things owned accumulate; "no longer have the cat" ends one.
    _p("pet", rf"{_FIRST}\s+{_ADV}{_PARTED_WITH}\s+"
       rf"(?:the|my|our)\s+{VALUE}", "pet", negated=True),
    _p("pet", rf"{_FIRST}\s+{_ADV}used to have\s+(?:a|an)\s+{VALUE}", "pet", negated=True),
    _p("pet", rf"{_FIRST}(?:'ve|\s+have)?\s+{_ADV}(?:adopted|got|rescued|have|has)\s+"
       rf"(?:a|an|two|three|a new)\s+{LIST}", "pet"),
    _p("pet", rf"{_FIRST}(?:'ve|\s+have)?\s+{_ADV}(?:adopted|rescued)\s+(?:this|these)\s+"
       rf"{VALUE}", "pet"),
    _p("pet", rf"(?<![\w'-])(?:my|our)\s+{VALUE_PET_NAMED}", "pet", certainty="implied",
       anywhere=True),
    _p("owns", rf"{_FIRST}\s+{_ADV}(?:sold|no longer own|don't own|got rid of)\s+"
       rf"(?:my|our|the)\s+(?:old\s+)?{VALUE}", "good", negated=True),
    _p("owns", rf"{_FIRST}(?:'ve|\s+have)?\s+{_ADV}(?:bought|own|purchased)\s+"
       rf"(?:a|an|my first|our first)\s+(?:new\s+)?{VALUE}", "good"),
    _p("studies", rf"{_OTHER_IS}\s+{_ADV}(?:studying|majoring in)\s+{VALUE}", "subject"),
    # What someone likes and does.
    _p("likes", rf"{_FIRST}\s+{_ADV}(?:really\s+)?(?:no longer|don't|do not)\s+"
       rf"(?:like|enjoy|love)\s+{VALUE}", "activity", negated=True),
    _p("likes", rf"{_FIRST}\s+{_ADV}{_LOVE}\s+{LIST}", "activity"),
    _p("likes", rf"{_WE_ARE}\s+{_ADV}(?:really\s+|more\s+|big\s+|so\s+)?into\s+{LIST}",
       "activity"),
    _p("hobby", rf"{_FIRST}(?:'ve|\s+have)?\s+{_ADV}{_TOOK_UP}\s+{LIST}", "hobby"),
)  # fmt: skip
