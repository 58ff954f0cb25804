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

from memstream.domain.fact_grammar import (
    DURATIVE_HEAD,
    ELLIPTICAL_HEAD,
    HEAD,
    KIN_MENTION,
    hypothetical,
    kin_alternation,
)
from memstream.domain.fact_kinds import slot_of_thing
from memstream.domain.fact_patterns import PATTERNS, Pattern
from memstream.domain.fact_plans import scheduled
from memstream.domain.fact_referents import may_refer, referred_facts
from memstream.domain.fact_time import began_at, starts_at
from memstream.domain.fact_triggers import TriggerIndex, trigger_index
from memstream.domain.fact_values import (
    MAX_NAME_CHARS,
    MAX_VALUE_CHARS,
    clean_name,
    clean_value,
    is_job,
    is_name,
    shaped,
)
from memstream.domain.fact_vocabulary import (
    ATTRIBUTE_SYNONYMS,
    FEMALE_KIN,
    KIN,
    MALE_KIN,
    NOT_ATTRIBUTE_NOUNS,
    PETS,
)
from memstream.domain.facts import (
    ENDED,
    SELF_EMPLOYED,
    AtomicFact,
    is_attribute,
    is_single_valued,
    kin_key,
    make_fact,
    speaker_key,
    value_key,
)
from memstream.domain.models import SourceMessage

__all__ = ["MAX_NAME_CHARS", "MAX_VALUE_CHARS", "clean_name", "clean_value", "extract_facts"]

_DROPPED_I = re.compile(
    r"^(?=(?:just\s+|finally\s+|recently\s+)?(?:been|moved|relocated|started|got|adopted|bought|"
    r"quit|lost|took up|picked up|joined|signed up|enrolled|switched|transferred|graduated|"
    r"retired|replaced|sold|rented|left|stopped|gave up)\b)",
    re.IGNORECASE,
)
# And the "I'm" of one told in the progressive ("Picking up a Yamaha next week").
_DROPPED_I_AM = re.compile(
    r"^(?=(?:just\s+|finally\s+)?(?:picking up|getting|buying|collecting)\b)",
    re.IGNORECASE,
)
# A sentence whose subject is a gerund of a lasting state tells the speaker's own state
# when the rest ties it to the speaker in the present ("Living in Shenzhen means I can visit
# Hong Kong", "Being a nurse has taught me patience") or tells it as lived up to now
# ("Living in Berlin has been great"): the phrase up to the predicate is read as "I'm
# living in Shenzhen". A general remark ("Living in Berlin is expensive") is anyone's; a
# simple past ("Volunteering at the shelter made me happy") tells an episode, not a state
# that holds; a predicate weighing a life that is not the speaker's ("sounds amazing",
# "must be hard") or a sentence speaking to someone ("you must love the food") is no one's.
_GERUND_SUBJECT = re.compile(
    r"^(?P<state>(?:being|living|working|studying|renting|volunteering|playing|driving|"
    r"riding)\s[^,;:!?]*?)\s+(?P<lived>has been|'s been|has become|has made)?(?(lived)|"
    r"(?:is|means|feels|makes|keeps|takes|gets|costs|has)\b(?=.*\b(?:I|me|my|I'm|I've)\b))",
    re.IGNORECASE,
)
_NOT_OWN_STATE = re.compile(
    r"\b(?:you|your|sounds?|seems?|looks?|must|would|could|might|can't be|cannot be)\b",
    re.IGNORECASE,
)
_LIST_SHAPES = frozenset({"activity", "hobby", "pet"})  # "Marks and Spencer" is one employer
_CLOSED_LIST = re.compile(r",[^,]*\b(?:and|or)\s+[^,]*$", re.IGNORECASE)
_LIST_SEPARATOR = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")
_ARTICLE = re.compile(r"^\s*(?:a|an|the|some|two|three)\s+", re.IGNORECASE)
# A title's full stop ends no sentence: "My GP, Dr. Visser, retired" is one sentence.
_TITLE_STOPS = "".join(rf"(?<!\b{t}\.)" for t in ("Dr", "Mr", "Mrs", "Ms", "Prof", "St"))
SENTENCE_BREAK = re.compile(rf"(?<=[.!?]){_TITLE_STOPS}\s+|\n+")
_CLAUSE_BOUND = re.compile(r"[,;:]\s+|\s+[-\u2013\u2014]+\s+")
# Every pattern's subject is one of these words ("I", "I'm", "we", "my brother", "our dog",
# "she", "Berlin has been home") or a name: a sentence without any is passed over, and one
# with only a name is read only by the patterns whose subject may be a name.
_SUBJECT_WORD = re.compile(r"\b(?:i|im|we|my|our|he|she|home|me)\b", re.IGNORECASE)
# "Three weeks of bouldering!" names no one: a durative opening is the speaker's own state,
# and so is a reply that leaves its subject out ("Yep, still a paralegal").
_OWN_STATE = re.compile(f"{DURATIVE_HEAD}|{ELLIPTICAL_HEAD}")
# A named subject comes straight before its verb ("Tom moved", "Ana's a nurse", "Ellie is").
NAMED_SUBJECT = re.compile(
    r"[A-Z][a-z]+(?:'s\s|\s+(?:is|has|have|had|just|recently|now|still|finally|also|moved|"
    r"lives|lived|works|worked|got|started|joined|bought|sold|adopted|plays|drives|uses|"
    r"volunteers|studies|became|quit|left|relocated|no|doesn't|isn't|retired|grew|took|changed|"
    r"goes|rents|settled|used|stopped|gave|broke|split|dropped|cancell?ed|passed|died)\b)"
)
_WORD = re.compile(r"[a-z][a-z'-]*")
# Every place a clause head begins: a pattern opening with one is tried only there, not at
# every character of the sentence.
_CLAUSE_HEAD = re.compile(f"(?={HEAD})")
_PAST_STATE = re.compile(r"\b(?:used to|lived|worked)\b", re.IGNORECASE)
# "I got a puppy for my niece", "a car for Ana": a gift, not the speaker's; "for my
# birthday" or "for the ride to work" is no one else's.
_FOR_SOMEONE = re.compile(
    rf"\s+for\s+(?:(?:my|his|her|our|their|a|the)\s+(?:{kin_alternation()}|kids?|children|"
    r"baby|family|parents)\b|him\b|them\b|(?-i:[A-Z]\w*))",
    re.IGNORECASE,
)
# "My brother got a job offer and moved to Madrid": the second verb shares the subject.
_SUBJECT_AT_HEAD = re.compile(rf"(?:^|[:;,]\s+)(?P<who>I|[Ww]e|[Hh]e|[Ss]he|{KIN_MENTION})(?=\s|')")
_KIN_MENTION = re.compile(KIN_MENTION)
_AND_VERB = re.compile(
    r"(?:,?\s+and\s+(?:then\s+)?|;\s+)(?=(?:just\s+|recently\s+|finally\s+)?(?:moved|"
    r"relocated|started|joined|bought|adopted|quit|became|works|lives)\b)"
)
_OPEN_SHAPES = {
    "lives_in": "place", "works_at": "org", "studies_at": "org", "job": "job",
    "studies": "subject", "diet": "diet", "car": "vehicle",
}  # fmt: skip

_ALL_PATTERNS = trigger_index(PATTERNS)
_NAMED_PATTERNS = trigger_index([pattern for pattern in PATTERNS if pattern.reads_names])
# A reply leaving its subject out is the speaker's only as a message's first sentence: after
# "Ana is great." or "My sister?", "Still a nurse" is about whoever was just named.
_REPLY_PATTERNS = tuple(p for p in PATTERNS if p.regex.pattern.startswith(ELLIPTICAL_HEAD))
_NOT_REPLY_PATTERNS = trigger_index([p for p in PATTERNS if p not in _REPLY_PATTERNS])
# A question states only what it takes for granted ("my manager at Lumen").
_PRESUPPOSED = trigger_index([pattern for pattern in PATTERNS if pattern.presupposed])

Subject = tuple[str, str]  # entity key and display name
_Other = tuple[str, str | None]  # a relation and, when said, the name: ("sister", "Ana")


def extract_facts(messages: Sequence[SourceMessage], *, user_id: str) -> tuple[AtomicFact, ...]:
    """The atomic facts these messages state, in message order, contradictions dropped."""
    facts: list[AtomicFact] = []
    last_said: dict[str, SourceMessage] = {}  # each speaker's message before, by speaker
    for message in messages:
        if message.role == "assistant":
            continue
        said = tuple(_message_facts(message, user_id, last_said.get(message.speaker)))
        facts.extend(_without_contradictions(without_named_endings(said)))
        last_said[message.speaker] = message
    return tuple(facts)


def without_named_endings(facts: tuple[AtomicFact, ...]) -> tuple[AtomicFact, ...]:
    """Without the endings told without an attribute of a subject a pattern with one already
    reads an ending of in the same message ("I sold my car" ends owns: car; "I quit my job
    at the bank" works_at): only the others need the values stated before them to say what
    they end (`fact_endings`)."""
    ended = {f.subject for f in facts if f.negated and f.attribute != ENDED}
    return tuple(f for f in facts if f.attribute != ENDED or f.subject not in ended)


def _message_facts(
    message: SourceMessage, user_id: str, earlier: SourceMessage | None = None
) -> Iterator[AtomicFact]:
    speaker = clean_name(message.speaker)
    before: _Other | None = None  # whom "he"/"she" may stand for, from earlier sentences
    for index, sentence in enumerate(_sentences(message.text)):
        # Chat drops the "I" of a sentence ("Moved to Leeds last year"); put it back.
        sentence = _DROPPED_I.sub("I ", sentence, count=1)
        sentence = _own_gerund_state(_DROPPED_I_AM.sub("I'm ", sentence, count=1))
        # "We're moving to Leeds in March": read as the move, beginning in March.
        sentence, planned = scheduled(sentence, message.ts)
        names_only = not _SUBJECT_WORD.search(sentence) and not _OWN_STATE.match(sentence)
        if names_only and not NAMED_SUBJECT.search(sentence):
            continue  # no pattern can match: the segmenter runs this on every L1
        stated = _stated_clauses(sentence)
        if stated:
            if stated.endswith("?"):
                patterns = _PRESUPPOSED
            else:
                stated = _shared_subject(stated)
                patterns = (
                    _NAMED_PATTERNS
                    if names_only
                    else (_NOT_REPLY_PATTERNS if index else _ALL_PATTERNS)
                )
            yield from _sentence_facts(stated, message, speaker, user_id, before, patterns, planned)
        before = _last_other(sentence) or before
    yield from _referred(message, speaker, user_id, earlier)


def _own_gerund_state(sentence: str) -> str:
    """A sentence opening with a gerund of a lasting state, as the speaker's statement of
    it ("Being an architect is ..." -> "I'm an architect."); any other sentence as it is."""
    found = _GERUND_SUBJECT.match(sentence)
    if found is None or _NOT_OWN_STATE.search(sentence):
        return sentence
    state = found["state"]
    if state[:6].lower() == "being ":
        state = state[6:]
    return f"I'm {state}."


def _referred(
    message: SourceMessage, speaker: str, user_id: str, earlier: SourceMessage | None
) -> Iterator[AtomicFact]:
    """The speaker's facts whose value an earlier sentence named (`fact_referents`), of the
    message or, for a name given as it opens, of the speaker's message before it."""
    if not may_refer(message.text):
        return
    sentences = _sentences(message.text)
    before = _sentences(earlier.text) if earlier is not None else ()
    for found in referred_facts(sentences, speaker, before):
        key, name = speaker_key(speaker), speaker
        if found.of is not None:  # "the shelter called him Biscuit": the speaker's dog's name
            key, name = kin_key(key, found.of), f"{speaker}'s {found.of}"
        yield make_fact(
            user_id=user_id,
            subject=key,
            subject_name=name,
            attribute=found.attribute,
            value=found.value,
            text=fact_sentence(name, found.attribute, found.value, False),
            valid_from=began_at(found.sentence, message.ts),
            recorded_at=message.ts,
            source_ids=(message.event_id,),
            certainty="implied",
        )


def _sentences(text: str) -> list[str]:
    """The text's sentences, stripped, with typographic apostrophes as plain ones."""
    return [s.strip() for s in SENTENCE_BREAK.split(text.replace("\u2019", "'"))]


def _stated_clauses(sentence: str) -> str:
    """The clauses of a statement before the first that weighs, wishes or plans ("Ellie is
    doing keto, so maybe a low-sugar option": Ellie is doing keto); "" when the first one
    does ("If we move to Berlin, ...") or a question holds one."""
    found = hypothetical(sentence)
    if found is None:
        return sentence
    if sentence.endswith("?"):
        return ""
    bounds = [b.start() for b in _CLAUSE_BOUND.finditer(sentence, 0, found.start())]
    return sentence[: bounds[-1]].rstrip() if bounds else ""


def _sentence_facts(
    sentence: str,
    message: SourceMessage,
    speaker: str,
    user_id: str,
    before: _Other | None,
    patterns: TriggerIndex,
    planned: bool = False,
) -> Iterator[AtomicFact]:
    lowered = sentence.lower()
    words = _WORD.findall(lowered)
    # A trigger word said with a possessive or a contraction is still said: "my
    # girlfriend's parents" holds "girlfriend".
    words += [word.partition("'")[0] for word in words if "'" in word]
    if "'s " in lowered:
        words.append("is")  # "she's a nurse", "Ana's on keto"
    heads: list[int] | None = None
    for pattern in patterns.candidates(words):
        if pattern.headed:
            if heads is None:
                heads = [head.start() for head in _CLAUSE_HEAD.finditer(sentence)]
            matches = _matches_at(pattern.regex, sentence, heads)
        else:
            matches = list(pattern.regex.finditer(sentence))
        for match in matches:
            subject = _subject(match, sentence, speaker, before)
            if subject is not None:
                yield from _facts(pattern, match, sentence, message, subject, user_id, planned)


def _matches_at(regex: re.Pattern[str], sentence: str, starts: list[int]) -> list[re.Match[str]]:
    """`regex.finditer(sentence)` for a regex that can match only at `starts` (ascending):
    the leftmost match from each start on, the next tried where the last one ended."""
    found: list[re.Match[str]] = []
    end = 0
    for start in starts:
        if start >= end and (match := regex.match(sentence, start)) is not None:
            if match.end() == start:  # empty: finditer's rules for those are not copied here
                return list(regex.finditer(sentence))
            found.append(match)
            end = match.end()
    return found


def _shared_subject(sentence: str) -> str:
    if " and " not in sentence and ";" not in sentence:
        return sentence
    head = _SUBJECT_AT_HEAD.search(sentence)
    if head is None:
        return sentence
    start = head.end()
    return sentence[:start] + _AND_VERB.sub(f" and {head['who']} ", sentence[start:])


def _last_other(text: str) -> _Other | None:
    """The last relation of the speaker's named in `text` ("my sister Ana"), if any."""
    if "my" not in text.lower():
        return None
    mentions = list(_KIN_MENTION.finditer(text))
    if not mentions:
        return None
    last = mentions[-1]
    return " ".join(last["kin"].split()[1:]).lower(), last["name"]


def _subject(
    match: re.Match[str], sentence: str, speaker: str, before: _Other | None
) -> Subject | None:
    """Whom a match is about: the speaker, a relation of theirs, or whom a pronoun stands for
    (the last relation named before it in the message, if the pronoun fits: "she" is never
    "my brother"). None when a pronoun stands for no one named."""
    groups = match.groupdict()
    pronoun, kin, named = groups.get("pron"), groups.get("kin"), groups.get("named")
    if named:
        # A sentence's first word is capitalised, so a pattern of names may take a pronoun
        # for one: "We're dating Tomás" is the speaker, "He's dating Tomás" no one named.
        pronoun_as_name = named.lower().split("'")[0]
        if pronoun_as_name in _FIRST_PERSON:
            return speaker_key(speaker), speaker
        if pronoun_as_name in _OTHER_PERSONS:
            return None
        if named.lower() in KIN:  # "Mom moved to Leeds"
            return kin_key(speaker_key(speaker), named.lower()), f"{speaker}'s {named.lower()}"
        if not is_name([named]) or value_key(named) == value_key(speaker):
            return None  # a capitalised word that names no one; the speaker by name
        return value_key(named), named
    if pronoun:
        other = _last_other(sentence[: match.start("pron")]) or before
        male = pronoun.lower() in {"he", "his"}
        if other is None or other[0] in (FEMALE_KIN if male else MALE_KIN):
            return None
        relation, name = other
    elif kin:
        relation, name = " ".join(kin.split()[1:]).lower(), groups.get("name")
    else:
        return speaker_key(speaker), speaker
    if name and is_name([name]):
        return value_key(name), name
    return kin_key(speaker_key(speaker), relation), f"{speaker}'s {relation}"


def _facts(
    pattern: Pattern,
    match: re.Match[str],
    sentence: str,
    message: SourceMessage,
    subject: Subject,
    user_id: str,
    planned: bool = False,
) -> Iterator[AtomicFact]:
    attribute, shape = pattern.attribute, pattern.shape
    if not attribute:
        opened = open_attribute(match["noun"])
        if opened is None:
            return
        attribute, shape = opened
    if pattern.fixed is not None:
        fixed = pattern.fixed
        yield _fact(pattern, attribute, fixed, match, sentence, message, subject, user_id, planned)
        return
    role = match.groupdict().get("role")
    if role is not None and (not is_job(role) or role.split()[-1].lower() == "student"):
        return  # "I'm good at chess" names no employer; a student's school is studies_at
    # A list yields its items up to the first that is not a value: in "I love hiking and
    # my kids love it" the list ends at "and".
    raw = match["value"]
    if shape in {"pet", "good", "product"} and not pattern.negated and _FOR_SOMEONE.search(raw):
        return
    if shape in _LIST_SHAPES and "," in raw and not _CLOSED_LIST.search(raw):
        # Without a closing "and"/"or" the comma starts another clause, not a list item
        # ("I love experimenting in the kitchen, coming up with something new").
        raw = raw.split(",", 1)[0]
    items = _LIST_SEPARATOR.split(raw) if shape in _LIST_SHAPES else [raw]
    for index, item in enumerate(items):
        value = shaped(shape, _ARTICLE.sub("", item) if index else item)
        if value is None:
            return
        if not pattern.attribute and attribute == "pet":
            value = f"{match['noun'].lower()} named {value}"
        slot = slot_of_thing(attribute, value)  # "bought the Pixel": a phone, not one more thing
        yield _fact(pattern, slot, value, match, sentence, message, subject, user_id, planned)


def open_attribute(noun: str) -> tuple[str, str] | None:
    """The attribute a possessive noun names and the shape of its values: "GP" is gp (a
    name), "home" is lives_in (a place); None for what is no attribute ("my point")."""
    slug = "_".join(noun.lower().split())
    if slug in NOT_ATTRIBUTE_NOUNS or not is_attribute(slug):
        return None
    if slug in PETS:
        return "pet", "name"  # "my dog is called Rex": a pet, named as the pet patterns name it
    attribute = ATTRIBUTE_SYNONYMS.get(slug, slug)
    return attribute, _OPEN_SHAPES.get(attribute, "name")


def _fact(
    pattern: Pattern,
    attribute: str,
    value: str,
    match: re.Match[str],
    sentence: str,
    message: SourceMessage,
    subject: Subject,
    user_id: str,
    planned: bool = False,
) -> AtomicFact:
    key, name = subject
    clause = sentence[match.start() :]  # a time phrase of another clause dates nothing here
    # A change told as scheduled begins at the time ahead its own clause names ("I left
    # Infosys last week and I'm joining Wipro next month": only the joining is ahead).
    start = starts_at(own_clause(sentence, match), message.ts) if planned else None
    return make_fact(
        user_id=user_id,
        subject=key,
        subject_name=name,
        attribute=attribute,
        value=value,
        text=fact_sentence(name, attribute, value, pattern.negated),
        valid_from=start or _valid_from(pattern, match, clause, message),
        recorded_at=message.ts,
        source_ids=(message.event_id,),
        certainty=pattern.certainty,
        negated=pattern.negated,
    )


# Where one clause of a sentence ends and another begins: punctuation or a joining word.
_CLAUSE_JOIN = re.compile(r"[,;:]|\s+[-\u2013\u2014]+\s+|\b(?:and|but|so|then|while)\b", re.I)


def own_clause(sentence: str, match: re.Match[str]) -> str:
    """The clause a match was read in: from the joining word or punctuation before its
    verb to the next after its value ("Next month I joined Wipro", of "I left Infosys, and
    next month I joined Wipro")."""
    cut = match.start("value") if "value" in match.re.groupindex else match.start()
    starts = [b.end() for b in _CLAUSE_JOIN.finditer(sentence, 0, cut)]
    begin = max(starts, default=0)
    later = _CLAUSE_JOIN.search(sentence, match.end())
    return sentence[begin : later.start() if later else len(sentence)]


def _valid_from(
    pattern: Pattern, match: re.Match[str], clause: str, message: SourceMessage
) -> datetime:
    # "I quit my job at the bank last month" ended last month; "I used to live in Porto
    # ten years ago" says when Porto held, not when it ended, so it ends when said.
    if pattern.negated and _PAST_STATE.search(match.group(0)):
        return message.ts
    return began_at(clause, message.ts)


_FIRST_PERSON = frozenset({"i", "we"})
_OTHER_PERSONS = frozenset({"he", "she", "they", "you", "it"})
_STATES = frozenset({"retired"})
_VERBS = {
    "lives_in": ("lives in", "no longer lives in"),
    "works_in": ("works in", "no longer works in"),
    "works_at": ("works at", "no longer works at"),
    "job": ("is a", "is no longer a"),
    "relationship": ("is", "is no longer"),
    "diet": ("is", "is no longer"),
    "pet": ("has a", "no longer has the"),
    "owns": ("owns a", "no longer owns the"),
    "studies": ("studies", "no longer studies"),
    "studies_at": ("studies at", "no longer studies at"),
    "likes": ("likes", "no longer likes"),
    "hobby": ("took up", "gave up"),
    "member_of": ("is a member of", "is no longer a member of"),
    "volunteers_at": ("volunteers at", "no longer volunteers at"),
    "plays": ("plays", "no longer plays"),
    "team": ("plays for", "no longer plays for"),
    "car": ("drives", "no longer drives"),
    "phone": ("uses a", "no longer uses the"),
    "laptop": ("uses a", "no longer uses the"),
    "motorbike": ("rides a", "no longer rides the"),
    "uses": ("uses", "no longer uses"),
    "statement": ("said", "no longer said"),
    "ended": ("still has", "ended"),  # resolved into the slot it ends (`fact_endings`)
}


def fact_sentence(name: str, attribute: str, value: str, negated: bool) -> str:
    """A fact as a readable sentence: "Maya lives in Berlin", "Maya's gp is Dr Okafor"."""
    if attribute not in _VERBS:  # an open attribute: "Maya's gp is Dr Okafor"
        noun = attribute.replace("_", " ")
        return f"{name}'s {noun} {'is no longer' if negated else 'is'} {value}"
    verb = _VERBS[attribute][negated]
    if value == SELF_EMPLOYED:  # "Marco is self-employed", not "works at self-employed"
        verb = "is no longer" if negated else "is"
    if name.endswith("parents"):  # "Wei's parents live in Hangzhou"
        verb = _PLURAL_VERB.sub(_plural, verb, count=1)
    if value in _STATES:
        verb = verb.removesuffix(" a")  # "is retired", not "is a retired"
    if verb.endswith(" a") and value[:1].lower() in "aeiou":
        verb += "n"
    return f"{name} {verb} {value}"


# The first verb of a fact's sentence, to agree with a plural subject.
_PLURAL_VERB = re.compile(r"\b(is|has|studies|[a-z]+s)\b")
_PLURALS = {"is": "are", "has": "have", "studies": "study"}


def _plural(verb: re.Match[str]) -> str:
    word = verb.group(1)
    return _PLURALS.get(word, word[:-1])


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
