"""The English statement patterns offline fact extraction reads: one row per way of saying.

A pattern matches a subject at the head of a clause ("I", "we", "my brother", "my sister
Ana", "she"), a verb phrase, and a value, built from the pieces in `fact_grammar`; `shape`
names what the value must look like for the slot, and the extractor checks it. A place or a
name keeps its case (a place is a capitalised name); everything else is matched in any case.
An open pattern takes its attribute from the possessive noun it matched ("my GP is Dr
Okafor": gp).

Each pattern lists `triggers`, words one of which every sentence it matches contains: the
extractor tries a pattern only on sentences holding one, so most patterns never run on
most sentences (the segmenter reads every L1 on the event loop).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memstream.domain.alternation import longest_first
from memstream.domain.fact_grammar import (
    ADV,
    DET,
    DURATIVE_HEAD,
    ELLIPTICAL_HEAD,
    FIRST,
    HAVE_BEEN,
    HEAD,
    IS_NO_LONGER,
    LIST,
    ME_IS,
    NAME,
    NAMED_VALUE,
    NOUN,
    NOUN_ENDS,
    OTHER_IS,
    VALUE,
    VALUE_PET_NAMED,
    WE_ARE,
    WHO,
)
from memstream.domain.fact_kinds import KNOWN_MAKES, SCHOOL_HEADS
from memstream.domain.fact_vocabulary import INSTRUMENTS, PETS
from memstream.domain.facts import SELF_EMPLOYED, Certainty


@dataclass(frozen=True, slots=True)
class Pattern:
    attribute: str  # "" for an open pattern: the attribute is the noun it matched
    regex: re.Pattern[str]
    shape: str  # place, org, job, diet, pet, good, activity, hobby, subject, fixed, ...
    triggers: frozenset[str]
    negated: bool = False
    certainty: Certainty = "stated"
    fixed: str | None = None  # the value when the words are it ("got married": married)
    # A possessive a question takes for granted: "Can you help me email my manager at Lumen?"
    # asks nothing about where the speaker works, and says it.
    presupposed: bool = False
    # Whether the regex opens with the clause head (`fact_grammar.HEAD`): it can match only
    # where a clause head begins.
    headed: bool = False

    @property
    def reads_names(self) -> bool:
        """Whether a sentence naming no one but by name may hold it: a named person is its
        subject ("Tom moved to Leeds"), or a name is what it ends ("Bruno passed away")."""
        return "(?P<named>" in self.regex.pattern or "(?P<gone>" in self.regex.pattern


def _p(
    attribute: str,
    pattern: str,
    shape: str,
    triggers: str,
    *,
    negated: bool = False,
    certainty: Certainty = "stated",
    fixed: str | None = None,
    anywhere: bool = False,
    presupposed: bool = False,
) -> Pattern:
    flags = 0 if shape in {"place", "name", "proper", "open"} else re.IGNORECASE
    regex = re.compile(("" if anywhere else HEAD) + pattern, flags)
    words = frozenset(triggers.split())
    return Pattern(
        attribute, regex, shape, words, negated, certainty, fixed, presupposed, not anywhere
    )


def _i(pattern: str) -> str:
    """Case-insensitive words inside a case-sensitive (place) pattern."""
    return f"(?i:{pattern})"


_NO_LONGER = r"(?:no longer|don't|doesn't|do not|does not)"
_LIVE_NOW = r"(?:live|lives|living|based)"
_MOVED = rf"(?:'ve|\s+have|\s+has)?\s+{ADV}moved\s+(?:back\s+)?(?:from\s+[^,.;!?]+?\s+)?to"
_WORK = r"(?:work|works|working)"
_LOVE = r"(?:really\s+|absolutely\s+)?(?:love|enjoy|like|adore)"
_TOOK_UP = r"(?:took up|taken up|picked up|started|began|got into|gotten into)"
_WENT = r"(?:went|gone|became|become|turned)"
_PARTED_WITH = r"(?:had to\s+)?(?:no longer have|don't have|gave away|give away|rehomed?|lost)"
_BE_ROLE = r"(?:'m|\s+am|\s+is|'s|'ve been|\s+have been|\s+has been|\s+been)?"
_TITLE = r"(?:head|director|chief|manager|lead|president|dean|principal)"
_DWELLING = r"(?:flat|apartment|house|home|place|condo|studio|room)"
_PLAY = r"(?:play|plays|playing|played)"
_INSTRUMENTS = longest_first(INSTRUMENTS)

# "I'm", "I am", "she is", "Ana's": the extractor reads any "'s" as a possible "is".
_BE_WORDS = "i'm im am is"
_LIVE_WORDS = "live lives living based"
_WORK_WORDS = "work works working worked"
_DIET_WORDS = "vegetarian vegan pescatarian pescetarian keto paleo gluten-free dairy-free"
_DIET_WORDS += " lactose-intolerant teetotal sober plant-based omnivore flexitarian"
_PET_WORDS = " ".join(word for word in PETS if " " not in word)
_PET_KINDS = longest_first(PETS)
# "I lost my job at Door Dash" ends it; the words before "my" say so.
_NOT_LEFT = "".join(
    rf"(?<!{verb} )" for verb in ("lost", "quit", "left", "leaving", "losing", "quitting", "from")
)
_DURATION_WORDS = "day days week weeks month months year years"
# A named thing, up to where a clause or a swap begins: "the Tecno with a Pixel" is the Tecno.
_THING = r"(?P<value>[^,.;:!?()\"]+?)(?=\s+(?:with|for)\b|\s*[,.;:!?()\"]|\s*$)"
# A make and its model: "Tecno Camon", "iPhone 12", "Fiat Panda" (checked against the makes).
_MADE = r"(?P<value>(?-i:[a-z]*[A-Z][\w-]*(?:\s+(?:[A-Z][\w-]*|\d{1,4})){0,2}))"
# A made thing holds its make's word: the patterns reading one run only where a make is said.
_MAKE_WORDS = " ".join(sorted(KNOWN_MAKES))
# The make names the thing had only as the head of its phrase: "a Pixel case" is a case and
# "the Pixel for my niece" hers. What may follow is a trim ("hybrid", "mini"), a time, a
# joining word or the clause's end.
_MADE_IS_HEAD = (
    r"(?=\s*(?:[,.;:!?)]|$)|\s+(?:(?i:hybrid|electric|plus|pro|max|mini|ultra|air|next|last|"
    r"this|yesterday|today|tomorrow|and|but|so|because|since|now|on|in|at|from|after|before|"
    r"with|to|off|up|again)\b|for\s+(?!(?i:my|his|her|our|their|him|them)\b)))"
)
# Keys handed back, returned, handed in or dropped off are a home left, not one had.
_KEYS_KEPT = "".join(
    rf"(?<!{verb} )(?<!{verb} the )" for verb in ("back", "returned", "in", "off", "over")
)
_NOT_GIVEN_UP = "".join(
    rf"(?<!{verb} )"
    for verb in (
        "sold",
        "replaced",
        "ditched",
        "in",
        "of",
        "lost",
        "from",
        "away",
        "him",
        "her",
        "them",
        "sell",
        "selling",
    )
)
# Where a thing one uses ends: "he's still on an old Samsung, refuses to change" (not "on
# the Pixel team").
_THING_ENDS = r"(?=\s*(?:[,.;:!?)]|$)|\s+(?:and|but|now|still|these|too|since|for)\b)"
# A state said to hold, not meat skipped once: the clause ends, or goes on with when.
_STATE_ENDS = (
    r"(?=\s*(?:[,.;!]|$)|\s+(?:in|for|since|anymore|any more|at all|now|these days|and|but)\b)"
)
_DIED = r"(?:passed away|passed on|died|passed(?=\s*[,.;!?]|\s*$|\s+(?:last|yesterday|recently)\b))"
_NOT_DIED = rf"(?!\s+(?:has\s+|had\s+|just\s+)?{_DIED})"
# A death, never a figure of speech: "died laughing", "nearly died" are none.
_DIED_FOR_GOOD = (
    r"(?:passed away|passed on|died(?=\s*[,.;!?]|\s*$|\s+(?:last|yesterday|recently|this|in|on|"
    r"at|peacefully|suddenly|today|two|three|a|an)\b))"
)

# Ending verbs any English speaker uses for a state, a membership or a thing had: "left",
# "quit", "gave up", "sold", "moved out of", "no longer go to", "don't ... anymore".
_ENDING = (
    r"(?:left|quit|stopped\s+(?:going\s+to|playing\s+for|playing|doing|using|attending|"
    r"seeing|eating)|stopped|gave\s+up(?:\s+on)?|given\s+up(?:\s+on)?|sold|moved\s+out\s+of|"
    r"broke\s+up\s+with|split\s+up\s+with|dropped\s+out\s+of|got\s+rid\s+of|cancell?ed|"
    r"no\s+longer\s+(?:go\s+to|goes\s+to|play\s+for|plays\s+for|play|plays|have|has|own|owns|"
    r"drive|drives|do|does|use|uses|attend|attends|belong\s+to|belongs\s+to|on|in|at|with|"
    r"doing|a\s+member\s+of|part\s+of)|not\s+on|off|(?:isn't|aren't)\s+(?:on|in|with|part\s+of)|"
    r"(?:don't|doesn't|do\s+not|does\s+not)\s+(?:go\s+to|play\s+for|play|have|own|drive|do|use|"
    r"attend)(?=[^,.;:!?]*\bany\s?more\b))"
)
_ENDING_WORDS = "left quit stopped gave given sold moved broke split dropped rid cancelled "
_ENDING_WORDS += "canceled longer not off isn't aren't anymore more"
# What ended: a short noun phrase up to where a clause, a time or "anymore" begins; not a
# departure or an errand ("left for our vacation", "I'm off to bake", "left early").
_ENDED_THING = (
    r"(?:(?:my|our|his|her|their|the|that|this)\s+)?(?:old\s+)?"
    r"(?!(?:to|for|from|with|on|at|out|early|home|work|now|again)\b)(?P<value>[^,.;:!?()\"]+?)"
    r"(?=\s+(?:anymore|any\s+more|last|this|in|on|at|after|before|because|since|and|but|so|"
    r"for|with|when|yesterday|today|ago|a\s+while|altogether|for\s+good)\b|\s*[,.;:!?()\"]|\s*$)"
)

# Someone else's course or shift is no statement of the speaker's: "his class at", "Ana's
# shift at".
_NOT_THEIRS = "".join(rf"(?<!{w} )" for w in ("his", "her", "their", "your", "'s"))
# A course or a shift named with no subject is the speaker's in a sentence that speaks of
# the speaker ("Accounting 101 at Perimeter College is kicking my butt"); without one it may
# be anyone's ("The transfer to Georgia Tech went through").
_SAID_OF_ME = r"^(?=[^.!?]*\b(?:I|I'm|we|my|our)\b)[^.!?]*?"
# Kinds of employer, as one says where one works before naming it (not a cafe or a hotel,
# where one is as often a guest).
_EMPLOYERS = (
    r"company|firm|startup|start-up|fintech|agency|bank|hospital|clinic|consultancy|"
    r"publisher|charity|nonprofit|non-profit"
)
# Every sentence naming a school holds its head word ("college"): the school patterns'
# triggers, whatever their verb or noun.
_SCHOOL_WORDS = " ".join(sorted(SCHOOL_HEADS))

# A role noun after a word saying what it is for ("running coach", "property manager",
# "piano teacher"): the head is the attribute. The word before it is no function word, no
# verb, and no word saying the role is past ("my old coach", "my former landlord").
_NOT_MODIFIERS = (
    r"and|or|but|with|without|to|in|at|on|for|from|of|by|the|a|an|is|was|has|had|have|"
    r"says|said|told|tells|thinks|thought|loves|likes|hates|knows|met|called|calls|asked|"
    r"just|also|still|really|very|so|then|now|too|old|former|ex|previous|late|first|last|"
    r"dear|poor|own|other|favou?rite|best|married|maiden|new|current|two|three|dad's|mum's"
)
_HEAD_NOT = rf"(?!(?:{_NOT_MODIFIERS})\b)(?![a-z]+ed\b)(?![a-z]+ly\b)"
_MODIFIER = rf"(?:{_HEAD_NOT}[a-z]{{3,}}\s+)"
_ROLE = rf"(?:(?i:new|current)\s+)?{_MODIFIER}(?P<noun>{_HEAD_NOT}(?:[a-z]{{3,}}|[A-Z]{{2,4}}))"
_ROLE_BY_ENDING = (
    rf"(?:(?i:new|current)\s+)?{_MODIFIER}"
    r"(?P<noun>[a-z]{2,}(?:er|or|ist|ian|ant|ent|ee|ach))\b"
)
# Where one goes, banks or is a regular, named by a place of a known kind ("we go to St
# Mary's Church", "I moved my account to EQ Bank", "I've been going to Café Lumen"): the
# kind is the slot (`fact_kinds.place_kind`). Going once ("we went to") is a visit.
_REGULAR_AT = (
    r"(?:go|goes|going|started going|attend|attends|attending|switched|switching|moved|"
    r"changed|transferred|bank|banks|banking|joined|a regular|regulars)"
)
_WHAT_MOVED = (
    r"(?:\s+(?:my|our|his|her|the|all\s+(?:my|our))\s+(?:current\s+)?(?:account|accounts|"
    r"savings|money|banking|membership|mortgage|prescriptions?|business))?"
)
# A medicine taken: "I started on amlodipine", "I'm taking sertraline", "the GP put me on
# metformin", "I was prescribed Lipitor". Said of oneself only ("me", "I"), since a
# relative's medicine is named the same way; where no word of medicine is in the sentence
# (pills, dose, doctor, prescription, ...) only a name with a medicine's ending counts.
_MEDICINE_CUE = (
    r"(?=[^.!?]*\b(?:mg|mcg|pills?|tablets?|doses?|prescri\w*|doctor|GP|Dr|pharmac\w*|"
    r"meds|medication|medicine|inhaler|side effects|blood pressure|cholesterol|dosage)\b)"
)
# Not "moved to": "we moved to Utrecht and I registered with a new GP" is a move.
_TAKE_MEDICINE = (
    r"(?:(?:started|starting|begun|began|switched|switching)\s+(?:over\s+)?"
    r"(?:on|onto|to)|taking|take|takes|on)"
)
_PUT_ME_ON = r"(?:put|started|switched|got)\s+me\s+(?:over\s+)?(?:on|onto|to)"
_PRESCRIBED_ME = r"(?:prescribed\s+me|I\s+(?:was|got|'ve\s+been|have\s+been)\s+prescribed)"
_MEDICINE = r"(?P<value>[A-Za-z][a-z-]{3,}(?:\s+\d+(?:\.\d+)?\s?(?:mg|mcg|ml|g)\b)?)"

PATTERNS: tuple[Pattern, ...] = (
    _p("member_of", rf"{WHO}{_BE_ROLE}\s+{ADV}{_REGULAR_AT}{_WHAT_MOVED}\s+(?:to|with|at)\s+"
       rf"{VALUE}", "place_kind",
       "go goes going attend attends attending switched switching moved changed transferred "
       "bank banks banking joined regular regulars"),
    _p("medication", rf"{_MEDICINE_CUE}{FIRST}{_BE_ROLE}\s+{ADV}{_TAKE_MEDICINE}\s+{_MEDICINE}",
       "medication_by_cue", "started starting begun began switched switching taking take takes on"),
    _p("medication", rf"{FIRST}{_BE_ROLE}\s+{ADV}{_TAKE_MEDICINE}\s+{_MEDICINE}",
       "medicine_name", "started starting begun began switched switching taking take takes on"),
    _p("medication", rf"(?<![\w'-]){_PUT_ME_ON}\s+(?:some\s+)?{_MEDICINE}", "medication_by_cue",
       "put started switched got", anywhere=True),
    _p("medication", rf"(?<![\w'-]){_PRESCRIBED_ME}\s+(?:some\s+)?{_MEDICINE}", "medication",
       "prescribed", anywhere=True),
    # "shooting with the Canon 6D": a camera, by its make (`fact_kinds`).
    _p("uses", rf"{WHO}{_BE_ROLE}\s+{ADV}(?:shoot|shoots|shooting|shot)\s+(?:with|on)\s+"
       rf"(?:an?|the|my|his|her)\s+{_THING}", "make", "shoot shoots shooting shot"),

    # Where someone lives: a capitalised place.
    _p("lives_in", _i(rf"{WHO}\s+{ADV}(?:used to live|lived)\s+in") + rf"\s+{VALUE}",
       "place", "lived live", negated=True),
    _p("lives_in", _i(rf"{WHO}\s+{ADV}{_NO_LONGER}\s+lives?\s+in") + rf"\s+{VALUE}",
       "place", "live lives", negated=True),
    _p("lives_in", _i(rf"{WHO}{_BE_ROLE}(?:'re|\s+are)?\s+{ADV}{_LIVE_NOW}\s+in")
       + rf"\s+{VALUE}", "place", _LIVE_WORDS),
    _p("lives_in", _i(rf"{WHO}{_MOVED}") + rf"\s+{VALUE}", "place", "moved"),
    # "I've lived in Madrid" alone may be one stop of many; with "for"/"since" it holds now.
    _p("lives_in", _i(rf"{WHO}(?:'ve|\s+have|\s+has)\s+{ADV}lived\s+in") + rf"\s+{VALUE}"
       + _i(r"(?=\s+(?:for|since)\b)"), "place", "lived"),
    _p("lives_in", _i(rf"{WHO}\s+{ADV}relocated\s+to") + rf"\s+{VALUE}", "place",
       "relocated"),
    _p("lives_in", _i(rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}(?:settled|moved into\s+(?:a|an|"
       rf"our|my|the)\s+(?:[a-z-]+\s+){{0,2}}{_DWELLING})\s+in") + rf"\s+{VALUE}", "place",
       "settled moved"),
    # A home acquired: "We closed on a house in Boulder", "the keys to the apartment in Vila
    # Madalena are in my pocket" (keys handed back end nothing here: they are not read).
    _p("lives_in", _i(rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}(?:closed on|bought|signed the "
       rf"lease (?:on|for))\s+(?:a|an|the|our|my)\s+(?:[a-z-]+\s+){{0,3}}{_DWELLING}\s+in")
       + rf"\s+{VALUE}", "place", "closed bought lease", certainty="implied"),
    _p("lives_in", _i(rf"{_KEYS_KEPT}(?<![\w'-])keys\s+to\s+"
       rf"(?:the|our|my)\s+(?:[a-z-]+\s+){{0,2}}{_DWELLING}\s+in") + rf"\s+{VALUE}",
       "place", "keys", certainty="implied", anywhere=True),
    # A home of one's own in a place: "our little flat in Porto", "I'm renting a room in Leeds".
    _p("lives_in", _i(rf"(?<![\w'-])(?:my|our)\s+(?:(?:little|new|tiny|small|own)\s+)?"
       rf"{_DWELLING}\s+in") + rf"\s+{VALUE}", "place", "my our", certainty="implied",
       anywhere=True, presupposed=True),
    _p("lives_in", _i(rf"{WHO}{_BE_ROLE}(?:'re|\s+are)?\s+{ADV}(?:renting|rent|rents)\s+"
       rf"an?\s+(?:[a-z-]+\s+){{0,2}}{_DWELLING}\s+in") + rf"\s+{VALUE}", "place",
       "renting rent rents"),
    # "Berlin has been home for five months", "Lyon is home now".
    _p("lives_in", rf"(?P<value>{NAME}(?:\s+{NAME}){{0,2}})\s+" + _i(
       r"(?:has been|is|'s)\s+(?:(?:my|our)\s+)?home\b(?!\s+to\b)"), "place", "home"),
    # Where someone comes from and grew up is not where they live now.
    # "My parents are still in Hangzhou": "still" says the place is where they stay, not a
    # visit; a stay with an end ("still in Rome for the holidays", "until June") is one.
    _p("lives_in", _i(rf"{WHO}(?:'s|\s+is|'re|\s+are|'m|\s+am)\s+still\s+in")
       + rf"\s+(?P<value>{NAME}(?:\s+{NAME}){{0,2}})"
       + _i(r"(?![\w'-]|\s+(?:for|on|until|till|over|visiting|with)\b)"), "place", "still"),
    _p("origin", _i(rf"{OTHER_IS}\s+{ADV}(?:originally\s+)?from") + rf"\s+{VALUE}", "place",
       "from"),
    _p("grew_up_in", _i(rf"{WHO}\s+{ADV}grew up in") + rf"\s+{VALUE}", "place", "grew"),
    _p("works_in", _i(rf"{WHO}{_BE_ROLE}\s+{ADV}{_WORK}\s+in") + rf"\s+{VALUE}", "place",
       "work works working"),
    # Where someone works, and as what.
    _p("works_at", rf"{WHO}\s+{ADV}(?:used to work|worked)\s+(?:at|for)\s+{VALUE}",
       "org", "work worked", negated=True),
    _p("works_at", rf"{WHO}\s+{ADV}{_NO_LONGER}\s+works?\s+(?:at|for)\s+{VALUE}",
       "org", "work works", negated=True),
    _p("works_at", rf"{WHO}\s+{ADV}(?:quit|left|lost)\s+{DET}\s+job\s+(?:at|with)\s+{VALUE}",
       "org", "job", negated=True),
    # Leaving by notice: "I handed in my notice at Infosys", "she resigned from Arup".
    _p("works_at", rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}(?:handed\s+in|gave|given|put\s+in|"
       rf"submitted|handed)\s+(?:my|his|her|their|our)\s+(?:notice|resignation)\s+(?:at|to)\s+"
       rf"{VALUE}", "org", "notice resignation", negated=True),
    _p("works_at", rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}resigned\s+(?:from|at)\s+{VALUE}",
       "org", "resigned", negated=True),
    _p("works_at", rf"{WHO}{_BE_ROLE}\s+{ADV}{_WORK}\s+(?:at|for)\s+{VALUE}", "org",
       _WORK_WORDS),
    _p("works_at", rf"{WHO}\s+{ADV}(?:got|started|landed|took)\s+{DET}\s+(?:new\s+)?"
       rf"(?:job|position|role)\s+(?:at|with)\s+{VALUE}", "org", "job position role"),
    # Starting at a named organisation, in a sentence that speaks of work: "I started at
    # Jean Coutu on Monday, same job, new country". Without a word of work it is where a
    # walk or a tour began ("we started at Shibuya and ended up in Shinjuku").
    _p("works_at", rf"(?=[^.!?]*\b(?:job|work|shifts?|office|colleagues?|boss|manager|team|"
       rf"role|position|hired|contract)\b){WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}started\s+"
       rf"(?:work(?:ing)?\s+)?at\s+{NAMED_VALUE}", "employer", "started"),
    # "I joined Brightwave as a data engineer": an employer, and the job below.
    _p("works_at", rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}joined\s+{VALUE}"
       rf"(?=\s+(?:\w+\s+)?as\s+an?\s)", "org", "joined"),
    # "I'm a nurse at St Mary's", "she's now head nurse at Apollo": the role must be a job.
    # "I'm a nurse at St Mary's"; "I'm a school nurse now, at Lincoln Elementary".
    _p("works_at", rf"{OTHER_IS}\s+{ADV}(?:an?\s+)?(?P<role>[a-z][a-z -]{{1,30}}?)"
       rf"(?:\s+now,)?\s+(?:at|for)\s+{VALUE}", "org", _BE_WORDS),
    # "my manager at Lumen Analytics", "my job at Arup": a place one works at.
    _p("works_at", rf"{_NOT_LEFT}(?<![\w'-])(?i:my)\s+(?:new\s+)?(?:boss|manager|colleagues?|"
       rf"coworkers?|co-workers?|team|supervisor|job|office)\s+(?:at|in)\s+{VALUE}", "org",
       "boss manager colleague colleagues coworker coworkers co-worker co-workers team supervisor "
       "job office",
       certainty="implied", anywhere=True, presupposed=True),
    _p("works_at", rf"(?:{WHO}\s+{ADV}{_WORK}\s+as|I{HAVE_BEEN})\s+{ADV}(?:an?\s+)?"
       rf"(?P<role>[a-z][a-z -]{{1,30}}?)\s+(?:at|for)\s+{VALUE}", "org", "as been"),
    _p("member_of", rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}(?:joined|signed up (?:at|with))"
       rf"\s+(?![^,.;!?]*\bas\s+an?\s){VALUE}", "org", "joined signed"),
    _p("volunteers_at", rf"{WHO}{_BE_ROLE}\s+{ADV}(?:volunteer|volunteers|volunteering|"
       rf"volunteered)\s+(?:at|for|with)\s+{VALUE}", "org",
       "volunteer volunteers volunteering volunteered"),
    _p("studies_at", rf"{WHO}{_BE_ROLE}\s+{ADV}(?:study|studies|studying)\s+at\s+{VALUE}",
       "org", "study studies studying"),
    _p("studies_at", rf"{OTHER_IS}\s+{ADV}an?\s+(?:[a-z-]+\s+)?student\s+at\s+{VALUE}",
       "org", "student"),
    # A degree or a school year said by its kind: "I'm doing a master's at McGill", "my son
    # Leo started school at Rosemount Elementary"; "graduated from McGill" ends it.
    _p("studies_at", rf"{WHO}{_BE_ROLE}\s+{ADV}(?:doing|studying\s+for|starting|started)\s+"
       rf"(?:a|an|my|his|her)\s+(?:master's|masters|phd|doctorate|degree|bachelor's|mba|"
       rf"diploma)(?:\s+in\s+[a-z ]{{2,30}}?)?\s+at\s+{NAMED_VALUE}", "org",
       "doing studying starting started"),
    _p("studies_at", rf"{WHO}\s+{ADV}(?:started|starts|starting)\s+(?:school|college|"
       rf"university|kindergarten|nursery|uni)\s+at\s+{NAMED_VALUE}", "org",
       "started starts starting"),
    _p("studies_at", rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}graduated\s+from\s+{NAMED_VALUE}",
       "org", "graduated", negated=True),
    # A school named as one ("Perimeter College", "Mesa Elementary", "Georgia Tech"): going
    # there, starting or getting in there, or a course or a transfer there is studying there.
    _p("studies_at", rf"{WHO}{_BE_ROLE}\s+{ADV}(?:(?:started|starts|starting|enrolled|enrolls|"
       rf"enrolling|transferred|transferring|accepted|admitted|go|goes|going|back)\s+"
       rf"(?:at|to|into|in)|got\s+(?:into|in\s+(?:at|to)|accepted\s+(?:at|to|into))|attend|"
       rf"attends|attending)\s+{VALUE}", "school", _SCHOOL_WORDS),
    _p("studies_at", rf"{_SAID_OF_ME}{_NOT_THEIRS}(?<![\w'-])(?:(?:my|our|the)\s+)?"
       rf"(?:(?:first|second|new|last|final)\s+)?(?:course|courses|class|classes|degree|"
       rf"semester|term|lectures?|exams?|transfer|major|(?-i:[A-Z][a-z]+)\s+\d{{3}})\s+"
       rf"(?:at|to)\s+{VALUE}", "school",
       _SCHOOL_WORDS, certainty="implied", anywhere=True),
    # Working for no employer ends working for one: "now I'm my own boss", "I went
    # freelance", "she's self-employed these days".
    # ("Being my own boss is great" names no one: a gerund is no subject.)
    _p("works_at", rf"(?!(?i:being|working)\s){WHO}(?:'m|\s+am|'s|\s+is|'re|\s+are|'ve|\s+have|"
       rf"\s+has)?\s+{ADV}(?:(?:been\s+)?(?:my|his|her|our|their)\s+own\s+boss(?:es)?|(?:been\s+)?"
       rf"(?:self-employed|freelance)|(?:went|gone)\s+freelance|(?:work|works|working)\s+for\s+"
       rf"(?:myself|himself|herself|ourselves))\b", "fixed",
       "boss bosses self-employed freelance myself himself herself ourselves",
       fixed=SELF_EMPLOYED),
    # An employer said by its kind, then named, the sentence ending there: "I'm at a fintech
    # now, Paystack", "she's at a startup these days, Chiva Pay".
    _p("works_at", rf"{OTHER_IS}\s+{ADV}(?:now\s+)?at\s+an?\s+(?:[a-z-]+\s+)?(?:{_EMPLOYERS})"
       rf"\s+(?:now|these\s+days),\s+(?-i:{NAMED_VALUE})(?=\s*[.!]?\s*$)", "org", _BE_WORDS),
    # Doing one's work at a named place: "I'm still cooking at Trattoria del Sole", "nine more
    # working days at Banco Andino", "my shift at St Mary's".
    _p("works_at", rf"{WHO}{_BE_ROLE}\s+{ADV}(?:cooking|teaching|nursing|bartending|"
       rf"waitressing|interning|lecturing)\s+at\s+{VALUE}", "org",
       "cooking teaching nursing bartending waitressing interning lecturing"),
    _p("works_at", rf"{_SAID_OF_ME}{_NOT_THEIRS}(?<![\w'-])(?:working\s+days?|work\s+days?|"
       rf"workdays?|(?:day\s+|night\s+|late\s+|early\s+)?shifts?)\s+at\s+{VALUE}", "org",
       "working work workday workdays shift shifts", certainty="implied", anywhere=True),
    _p("job", rf"{WHO}(?:'m|\s+am|\s+is|'s)?\s+{ADV}(?:no longer|not)\s+an?\s+{VALUE}",
       "job", "longer not", negated=True),
    _p("job", rf"{WHO}\s+{ADV}used to be\s+an?\s+{VALUE}", "job", "used", negated=True),
    _p("job", rf"(?:{OTHER_IS}|I{HAVE_BEEN})\s+{ADV}an?\s+{VALUE}", "job", _BE_WORDS + " been"),
    _p("job", rf"{WHO}{HAVE_BEEN}?\s+{ADV}(?:{_WORK}|started|start|began|joined\s+.{{1,40}}?)"
       rf"\s+(?:out\s+)?as\s+an?\s+{VALUE}", "job", "as"),
    _p("job", rf"{WHO}\s+{ADV}became\s+an?\s+{VALUE}", "job", "became"),
    _p("job", rf"{ELLIPTICAL_HEAD}(?i:an?)\s+{VALUE}", "job", "still", anywhere=True),
    _p("works_at", rf"{ELLIPTICAL_HEAD}(?i:an?)\s+(?P<role>[a-z][a-z -]{{1,30}}?)\s+(?:at|for)\s+"
       rf"{VALUE}", "org", "still", anywhere=True),
    # A title without an article: "she's now head of pharmacy at Apollo".
    _p("job", rf"(?:{OTHER_IS}|I\s+{ADV}became)\s+{ADV}(?:the\s+)?(?P<value>{_TITLE}\s+of\s+"
       rf"[^,.;:!?()\"]+)", "title", "head director chief manager lead president dean principal"),
    _p("job", rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}(?:got|been|was)\s+promoted\s+to\s+"
       rf"(?:an?\s+)?{VALUE}", "job", "promoted"),
    _p("job", rf"{WHO}{_BE_ROLE}\s+{ADV}retired\b(?!\s+(?:from\s+)?(?:the|my|his|her|a)\b)",
       "fixed", "retired", fixed="retired"),
    # Relationship status: said outright, or implied by naming a spouse or partner.
    _p("relationship", rf"{FIRST}\s+{ADV}got married\b", "fixed", "married", fixed="married"),
    _p("relationship", rf"{WE_ARE}\s+{ADV}married\b", "fixed", "married", fixed="married"),
    _p("relationship", rf"{FIRST}\s+{ADV}got engaged\b", "fixed", "engaged", fixed="engaged"),
    _p("relationship", rf"{WE_ARE}\s+{ADV}engaged\b", "fixed", "engaged", fixed="engaged"),
    _p("relationship", rf"(?:{ME_IS}|{FIRST}\s+got)\s+{ADV}divorced\b", "fixed",
       "divorced", fixed="divorced"),
    _p("relationship", rf"(?:{OTHER_IS}|I{HAVE_BEEN})\s+{ADV}single\b", "fixed", "single",
       fixed="single"),
    _p("relationship", r"(?<![\w-])(?:my|our)\s+(?:husband|wife|spouse)(?![\w-])", "fixed",
       "husband wife spouse", fixed="married", certainty="implied", anywhere=True),
    _p("relationship", r"(?<![\w-])my\s+(?:boyfriend|girlfriend|fiance|fiancee)(?![\w-])", "fixed",
       "boyfriend girlfriend fiance fiancee", fixed="in a relationship", certainty="implied",
       anywhere=True),
    # Diet.
    _p("diet", rf"{IS_NO_LONGER}\s+(?:an?\s+)?{VALUE}", "diet", _DIET_WORDS, negated=True),
    _p("diet", rf"{FIRST}\s+{ADV}(?:used to be|stopped being|gave up being)\s+(?:an?\s+)?"
       rf"{VALUE}", "diet", _DIET_WORDS, negated=True),
    _p("diet", rf"(?:{ME_IS}|I{HAVE_BEEN}|{FIRST}(?:'ve|\s+have)?\s+{ADV}{_WENT})\s+{ADV}"
       rf"(?:an?\s+)?{VALUE}", "diet", _DIET_WORDS),
    # "my girlfriend Ellie is doing keto", "she's on a vegan diet".
    _p("diet", rf"{OTHER_IS}\s+{ADV}(?:doing|on)\s+(?:an?\s+)?{VALUE}", "diet", _DIET_WORDS),
    # "Ellie is still strict keto", "he's fully vegan": a diet said of anyone, as it is now.
    # "My sister Katja is the vegetarian in the family": a definite article too predicates.
    _p("diet", rf"{OTHER_IS}\s+{ADV}(?:the\s+)?(?:(?:strict|strictly|fully|mostly|completely|"
       rf"full)\s+)?{VALUE}", "diet", _DIET_WORDS),
    # "I haven't eaten meat in years", "we don't eat meat anymore"; not "red meat", nor meat
    # left out on one occasion ("I don't eat meat on Fridays").
    _p("diet", rf"{FIRST}\s+{ADV}(?:haven't|have not|don't|do not|no longer|stopped|gave up|"
       rf"quit)\s+(?:eaten|eat|eating)\s+(?:any\s+)?meat{_STATE_ENDS}", "fixed", "meat",
       fixed="vegetarian", certainty="implied"),
    # A durative state: "Five months fully plant-based and I'm bored of chickpeas".
    _p("diet", rf"{DURATIVE_HEAD}(?i:(?:fully|completely|strictly|totally)\s+)?{VALUE}", "diet",
       _DIET_WORDS, certainty="implied", anywhere=True),
    # Pets and things owned accumulate; "no longer have the cat" ends one.
    _p("pet", rf"{FIRST}\s+{ADV}{_PARTED_WITH}\s+"
       rf"(?:the|my|our)\s+{VALUE}", "pet", _PET_WORDS + " cats dogs", negated=True),
    _p("pet", rf"{FIRST}\s+{ADV}used to have\s+(?:a|an)\s+{VALUE}", "pet", "used",
       negated=True),
    # "our cat Mochi passed away": a pet, named or not, no longer had.
    _p("pet", rf"(?<![\w'-])(?:my|our)\s+(?:(?:old|little|sweet)\s+)?(?P<value>(?:{_PET_KINDS})"
       rf"(?:\s+(?-i:[A-Z][a-z]+))?)\s+(?:has\s+|had\s+|just\s+)?{_DIED}",
       "pet", "died passed", negated=True, anywhere=True),
    _p("pet", rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}(?:adopted|got|rescued|have|has)\s+"
       rf"(?:a|an|two|three|a new|another)\s+{LIST}", "pet", "adopted got rescued have has"),
    _p("pet", rf"{FIRST}(?:'ve|\s+have)?\s+{ADV}(?:adopted|rescued)\s+(?:this|these)\s+"
       rf"{VALUE}", "pet", "adopted rescued"),
    _p("pet", rf"(?<![\w'-])(?:my|our)\s+(?:(?:new|little)\s+)?{VALUE_PET_NAMED}\b"
       rf"{_NOT_DIED}", "pet", "my our",
       certainty="implied", anywhere=True),
    _p("owns", rf"{WHO}\s+{ADV}(?:sold|replaced|ditched|no longer own|don't own|got rid of)\s+"
       rf"(?:my|our|his|her|the)\s+(?:old\s+)?{_THING}", "product",
       "sold replaced ditched own rid", negated=True),
    # A thing of a known make had now: "My Tecno Camon keeps freezing", "my old iPhone";
    # the make says its kind, and the kind its slot (`fact_kinds`).
    _p("owns", rf"{_NOT_GIVEN_UP}(?<![\w'-])(?i:my|our)\s+(?:(?i:old|new|little|trusty|"
       rf"beloved|current)\s+)?{_MADE}", "make", _MAKE_WORDS, certainty="implied",
       anywhere=True, presupposed=True),
    # A thing of a known make one is "on": "I'm on a Pixel now", "he's still on an old Samsung".
    # "My friend Kenji came along on his old Kawasaki": the thing is whoever "his" stands
    # for (the relation named before it), as "my" makes it the speaker's.
    _p("owns", rf"{_NOT_GIVEN_UP}(?<!me )(?<!us )(?<![\w'-])(?P<pron>(?i:his|her))\s+"
       rf"(?:(?i:old|new|little|trusty|beloved|current)\s+)?{_MADE}", "make", _MAKE_WORDS,
       certainty="implied", anywhere=True),
    _p("owns", rf"(?:{OTHER_IS}|{WE_ARE})\s+{ADV}on\s+(?:an?|the|my|our|his|her|their)\s+"
       rf"(?:(?i:old|new|ancient|ageing|aging|cheap)\s+)?{_MADE}{_THING_ENDS}", "make",
       _MAKE_WORDS, certainty="implied"),
    # A thing of a known make given to the speaker is theirs: "he sent me his old iPhone 12".
    _p("owns", rf"(?<![\w'-])(?:gave|sent|handed|passed|gifted)\s+me\s+(?:his|her|their|an?|"
       rf"the)\s+(?:(?:old|spare|used|new)\s+)?{_MADE}", "make", _MAKE_WORDS,
       certainty="implied", anywhere=True),
    # Coming to have a thing of a known make, whatever the verb of acquiring ("ordered",
    # "picked up", "I'm getting"): its kind is its slot ("a Yamaha MT-07": motorbike).
    _p("owns", rf"{WHO}(?:'ve|\s+have|\s+has|'m|\s+am|'re|\s+are)?\s+{ADV}(?:bought|got|"
       rf"ordered|picked up|picking up|collected|leased|rented|getting|buying|purchased)\s+"
       rf"(?:a|an|the|my|our)\s+(?:(?i:new|used|second-hand|secondhand)\s+)?{_MADE}"
       rf"{_MADE_IS_HEAD}", "make", _MAKE_WORDS),
    _p("owns", rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}(?:bought|own|purchased)\s+"
       rf"(?:a|an|the|my first|our first)\s+(?:new\s+)?{VALUE}", "product",
       "bought own purchased"),
    # "I opened a bakery", "she started her own online store": a business of one's own.
    _p("owns", rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}(?:opened|started|launched|founded)\s+"
       rf"(?:a|an|my own|our own|his own|her own)\s+(?:new\s+)?{VALUE}", "business",
       "opened started launched founded"),
    # "I traded in my Corolla for a Tesla": one thing given up, another had.
    _p("owns", rf"{WHO}\s+{ADV}traded\s+(?:in\s+)?(?:my|our|his|her|the)\s+(?:old\s+)?"
       rf"(?P<value>[^,.;:!?()\"]+?)\s+for\b", "product", "traded", negated=True),
    _p("owns", rf"{WHO}\s+{ADV}traded\s+(?:in\s+)?[^,.;:!?()\"]+?\s+for\s+(?:an?|the)\s+"
       rf"(?:new\s+)?{VALUE}", "product", "traded"),
    _p("uses", rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}switched\s+(?:over\s+)?to\s+"
       rf"(?:an?\s+|the\s+)?{VALUE}", "product", "switched"),
    # "I drive a Yaris", "she drives an old van": the vehicle someone uses now.
    _p("car", rf"{WHO}{_BE_ROLE}\s+{ADV}(?:drive|drives|driving)\s+(?:an?|the|my|his|her)\s+"
       rf"(?:new\s+)?{VALUE}", "vehicle", "drive drives driving"),
    _p("uses", rf"{WHO}{_BE_ROLE}\s+{ADV}(?:ride|rides|riding|use|uses|using)\s+an?\s+"
       rf"{VALUE}", "product", "ride rides riding use uses using"),
    # "I signed up for Japanese lessons", "she's taking pottery classes".
    _p("studies", rf"{WHO}{_BE_ROLE}\s+{ADV}(?:signed up for|enrolled in|started|taking|take|"
       rf"takes|booked)\s+(?:some\s+)?(?P<value>[A-Za-z]+(?:\s+[A-Za-z]+)?)\s+"
       rf"(?:lessons|classes|course)\b", "subject", "lessons classes course"),
    _p("studies", rf"{OTHER_IS}\s+{ADV}(?:studying|majoring in)\s+{VALUE}", "subject",
       "studying majoring"),
    # What someone plays: an instrument or a sport ("I've been playing guitar for a year").
    _p("plays", rf"{WHO}{_BE_ROLE}\s+{ADV}{_PLAY}\s+(?:the\s+)?{VALUE}", "played",
       "play plays playing"),
    _p("team", rf"{WHO}{_BE_ROLE}\s+{ADV}{_PLAY}\s+for\s+{VALUE}", "org", "play plays playing"),
    # A player's part in a band, as bands say it: "I'm on bass", "she's on drums now".
    _p("plays", rf"{OTHER_IS}\s+{ADV}on\s+(?:the\s+)?(?P<value>{_INSTRUMENTS})\b"
       r"(?!\s+(?:duty|team|stand|case|lesson|lessons|tuner)\b)", "played", _BE_WORDS),
    # Playing an instrument in a named group is being in it: "I'm playing bass in Harbour
    # Lights now", "she plays violin with The Hallé Orchestra". "In" also names where one
    # plays ("bass in New York next week"), so after it a name counts only as a state, told
    # with "now", "these days" or how long ("since May", "for a year"); never as an event.
    _p("member_of", rf"{WHO}{_BE_ROLE}\s+{ADV}{_PLAY}\s+(?:the\s+)?(?:{_INSTRUMENTS})\s+"
       rf"(?:with|for|in(?=\s+[^,.;:!?]+?\s+(?:now|these days|nowadays|since|for)\b))\s+"
       rf"(?P<value>(?-i:(?:The\s+)?[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)+))", "org",
       "play plays playing"),
    # What someone likes and does.
    _p("likes", rf"{FIRST}\s+{ADV}(?:really\s+)?(?:no longer|don't|do not)\s+"
       rf"(?:like|enjoy|love)\s+{VALUE}", "activity", "like enjoy love", negated=True),
    _p("likes", rf"{FIRST}\s+{ADV}{_LOVE}\s+{LIST}", "activity", "love enjoy like adore"),
    _p("likes", rf"(?:{WE_ARE}|{OTHER_IS})\s+{ADV}(?:really\s+|more\s+|big\s+|so\s+)?into\s+"
       rf"{LIST}", "activity", "into"),
    _p("hobby", rf"{FIRST}(?:'ve|\s+have)?\s+{ADV}{_TOOK_UP}\s+{LIST}", "hobby",
       "took taken picked started began got gotten"),
    _p("hobby", rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}(?:gave up|given up|quit|stopped)\s+"
       rf"{LIST}", "hobby", "gave given quit stopped", negated=True),
    _p("hobby", rf"{WHO}{HAVE_BEEN}\s+{ADV}(?:doing|practicing|practising)\s+{LIST}", "hobby",
       "doing practicing practising"),
    _p("hobby", rf"{FIRST}\s+{ADV}(?:do|practice|practise)\s+{LIST}", "hobby",
       "do practice practise"),
    # A durative activity or language: "Three weeks of bouldering", "Six months into Japanese".
    _p("hobby", rf"{DURATIVE_HEAD}(?i:of)\s+{VALUE}", "hobby", _DURATION_WORDS,
       certainty="implied", anywhere=True),
    _p("studies", rf"{DURATIVE_HEAD}(?i:of|into)\s+{VALUE}", "language", _DURATION_WORDS,
       certainty="implied", anywhere=True),
    # "I'm learning Japanese": a language, or another subject with a name.
    _p("studies", rf"{OTHER_IS}\s+{ADV}learning\s+{NAMED_VALUE}", "proper", "learning"),
    # Whom one reports to is one's manager: "I report to Joy now", "she reports to Mr Lin".
    _p("manager", rf"{WHO}{_BE_ROLE}(?:'re|\s+are)?\s+{ADV}(?:report|reports|reporting)\s+"
       rf"(?:directly\s+)?to\s+{NAMED_VALUE}", "name", "report reports reporting"),
    # A partner, named: "I'm dating Tomás"; "Javier and I split up" ends one.
    _p("partner", rf"{WHO}{_BE_ROLE}(?:'re|\s+are)?\s+{ADV}(?:dating|seeing|engaged to|"
       rf"married to)\s+{NAMED_VALUE}", "name", "dating seeing engaged married"),
    _p("partner", rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}(?:married|wed)\s+{NAMED_VALUE}",
       "name", "married wed"),
    _p("partner", rf"{WHO}{HAVE_BEEN}\s+{ADV}with\s+{NAMED_VALUE}(?=\s+(?i:for|since)\b)",
       "name", "with"),
    _p("partner", rf"{NAMED_VALUE}\s+(?i:and\s+(?P<me>I)\s+(?:just\s+|finally\s+)?(?:got married|"
       r"got engaged|are engaged|are married|moved in together)\b)", "name",
       "married engaged together"),
    _p("partner", rf"{NAMED_VALUE}\s+(?i:and\s+(?P<me>I)\s+(?:have\s+|just\s+|finally\s+)?"
       r"(?:split up|broke up|separated|divorced|got divorced)\b)", "name", "split broke "
       "separated divorced", negated=True),
    _p("partner", rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}(?:split up|broke up)\s+with\s+"
       rf"{NAMED_VALUE}", "name", "split broke", negated=True),
    # A name taken or changed: "I changed my surname to Silva", "I'm Mrs Silva now".
    _p("surname", _i(rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}(?:legally\s+)?changed\s+"
       r"(?:my|our|his|her)\s+(?:last\s+name|surname)\s+to") + rf"\s+{NAMED_VALUE}", "name",
       "changed"),
    _p("name", _i(rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}(?:legally\s+)?changed\s+"
       r"(?:my|our|his|her)\s+(?:first\s+)?name\s+to") + rf"\s+{NAMED_VALUE}", "name",
       "changed"),
    _p("surname", _i(rf"{OTHER_IS}\s+{ADV}(?:Mrs|Ms|Mr)\.?") + rf"\s+{NAMED_VALUE}", "name",
       "mrs ms mr"),
    # "The new surname is Abrams now", "my new last name is Silva"; "I'm taking Josh's
    # surname, so I'll be Rachel Abrams": the name after the first one is the surname.
    _p("surname", rf"{_SAID_OF_ME}" + _i(r"(?<![\w'-])(?:my|the)\s+new\s+(?:last\s+name|surname|"
       r"married\s+name)\s+is") + rf"\s+{NAMED_VALUE}", "name", "surname name", anywhere=True),
    _p("surname", _i(rf"{FIRST}(?:'m|\s+am)\s+{ADV}(?:taking|took|taken)\s+(?:[\w-]+'s|his|her|"
       r"their)\s+(?:last\s+name|surname|name),?\s+so\s+I(?:'ll|\s+will)\s+be")
       + rf"\s+{NAME}\s+{NAMED_VALUE}", "name", "taking took taken"),
    _p("name", _i(rf"{WHO}\s+{ADV}(?:go|goes)\s+by") + rf"\s+{NAMED_VALUE}", "name", "by"),
    # "I have a sister called Ana", "we started a band named The Hollows".
    _p("", _i(rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}(?:have|has|got|started|joined|formed|"
       rf"bought)\s+(?:a|an)\s+") + rf"{NOUN}\s+" + _i("(?:called|named)")
       + rf"\s+{NAMED_VALUE}", "open", "called named"),
    # "I got a new laptop, a ThinkPad": the new thing, named.
    _p("", rf"{WHO}(?:'ve|\s+have|\s+has)?\s+{ADV}(?i:got|bought|ordered|picked up)\s+"
       rf"(?i:an?|my)\s+(?i:new)\s+{NOUN},?\s+(?:(?i:an?|the)\s+)?{NAMED_VALUE}"
       r"(?=\s*(?:[,.;:!?)]|$|\s+[a-z]))", "open", "new"),
    # "my dog's name is Max", "my boss's name is Sue".
    _p("", rf"(?<![\w'-])(?i:my)\s+{NOUN}'s?\s+(?i:name\s+is|name's)\s+{NAMED_VALUE}",
       "open", "name"),
    # Open attributes: "my GP is Dr Okafor", "my new phone is a Pixel", "Jess is my
    # flatmate", "my flatmate Jess", "Jess, my flatmate,".
    _p("", rf"(?<![\w'-])(?i:my|our)\s+{NOUN}(?:\s+is|'s)\s+(?:(?i:called|named|an?|the)\s+)?"
       rf"{NAMED_VALUE}\b", "open", "my our"),
    _p("", rf"(?:^|[,;:]\s+|\b(?:and|but|so|because)\s+){NAMED_VALUE}\s+(?i:is)\s+(?i:my|our)\s+"
       rf"{NOUN}{NOUN_ENDS}", "open", "my our"),
    _p("", rf"(?<![\w'-])(?i:my|our)\s+{NOUN}\s+{NAMED_VALUE}(?=\s*(?:[,.;:!?)]|$|\s+[a-z]))"
       rf"{_NOT_DIED}",
       "open", "my our", anywhere=True),
    _p("", rf"(?:^|[.;:!?]\s+){NAMED_VALUE},\s+(?i:my|our)\s+{NOUN}\s*[,.;:!?)]", "open", "my our",
       anywhere=True),
    # An appositive names what the noun before it is: "my GP, Dr. Visser, wants ...",
    # "Sanne's doctor, Dr. Jansen, told her"; set off by commas on both sides: a list ("my
    # sister, Tom and I") goes on past the name, and a name closing the sentence after a
    # comma is whom it speaks to ("I've struggled with my business, Jon.").
    _p("", rf"(?<![\w'-])(?:(?i:my|our)|(?P<named>{NAME})'s)\s+{NOUN},\s+{NAMED_VALUE}"
       r"(?=\s*,)", "open", "my our is", anywhere=True),
    # A role named with what it is for, its head noun the attribute: "my running coach
    # Rob", "Rob, my running coach,", "our property manager, Dana,", "my piano teacher is
    # Ms Lee" (coach, manager, teacher: a new coach replaces the old whatever the sport).
    # Set off by commas or after "is"; said straight before the name only when the head
    # has a role's ending (coach, teacher, manager), since "my mum told Tom" names no mum.
    _p("", rf"(?<![\w'-])(?i:my|our)\s+{_ROLE},\s+{NAMED_VALUE}(?=\s*,)", "open", "my our",
       anywhere=True),
    _p("", rf"(?:^|[.;:!?]\s+){NAMED_VALUE},\s+(?i:my|our)\s+{_ROLE}\s*[,.;:!?)]", "open",
       "my our", anywhere=True),
    _p("", rf"(?<![\w'-])(?i:my|our)\s+{_ROLE}(?:\s+is|'s)\s+(?:(?i:called|named)\s+)?"
       rf"{NAMED_VALUE}\b", "open", "my our", anywhere=True),
    _p("", rf"(?<![\w'-])(?i:my|our)\s+{_ROLE_BY_ENDING}\s+{NAMED_VALUE}"
       rf"(?=\s*(?:[,.;:!?)]|$|\s+[a-z])){_NOT_DIED}", "open", "my our", anywhere=True),
    # A death told by name ("Sad news, Bruno passed away last week"): the speaker's values
    # naming the one who died end ("a dog named Bruno", a partner), whatever their slot
    # (`fact_endings`); a name no value of the speaker's holds ends nothing.
    _p("ended", rf"(?<![\w'-])(?P<gone>(?P<value>{NAME}))\s+(?:has\s+|had\s+|just\s+|sadly\s+)?"
       rf"{_DIED_FOR_GOOD}", "ended", "passed died", negated=True, anywhere=True),
    # An ending told without its attribute ("I've left the Magpies", "Ellie quit keto",
    # "we stopped going to the climbing gym"): what ended is read here, and which slot it
    # closes only against the values stated before it (`fact_endings`).
    _p("ended", rf"{WHO}(?:'ve|\s+have|\s+has|'d|\s+had)?(?:'m|\s+am|\s+is|'s|'re|\s+are)?\s+"
       rf"{ADV}{_ENDING}\s+{_ENDED_THING}", "ended", _ENDING_WORDS, negated=True),
)  # fmt: skip
