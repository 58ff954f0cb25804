"""Changes of state told in words, for the memories no fact was read from.

Most people tell a change without the sentence a fact pattern reads ("Landed in Singapore
with two suitcases", "First training with Coogee Rovers"), but the telling has a shape any
English conversation shares: a statement (not a question, not a plan) by or about the person
asked about, with a change-of-state word in it (moved, started, switched, quit, adopted, no
longer, these days, ...). For a question about what holds now, the newest leaf that tells
such a change about the person asked marks the memories said before its session as possibly
replaced: they held at most until it (`closed_by_told_change`). For a question about what held
before a change, a fact version the question names comes first, then the first memory naming
what the question says came after ("before Tomás", "before her cat"), then the latest fact change,
then the newest told change (`before_instant`).

Nothing here reads which attribute a change is about: these rules apply where no fact
version does, after recall's fit, so they order and label what recall keeps and never
change what it keeps. Pure, standard library only.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from memstream.domain.fact_extraction import SENTENCE_BREAK
from memstream.domain.fact_grammar import HYPOTHETICAL
from memstream.domain.facts import AtomicFact
from memstream.domain.lexical import STOPWORDS, term_set, tokenize
from memstream.domain.memory_validity import latest_change, named_change
from memstream.domain.models import Level, MemoryNode, SourceMessage
from memstream.domain.query import Query
from memstream.domain.ranking import RecalledMemory
from memstream.domain.tokens import count_tokens
from memstream.domain.validity import Validity

# The change words that are not verbs: they say the state changed whoever brought it about.
_ADVERBS = r"no\s+longer|anymore|any\s+more|these\s+days|from\s+now\s+on|since"
# Words that tell a state began or ended, in any conversation: change verbs in their past or
# progressive forms, and the adverbs that contrast now with before. "now" and "new" are left
# out: "oat milk is fine now" and "the new jib" tell no change of what someone is or has.
_CHANGE = re.compile(
    r"\b(?:moved|moving|relocated|started|starting|began|begun|switched|swapped|changed"
    r"|joined|left|quit|quitting|retired|adopted|bought|sold|selling|stopped|renamed|renaming"
    r"|hired|promoted|graduated|transferred|replaced|became|divorced|engaged|married"
    r"|signed\s+up|took\s+up|taken\s+up|gave\s+up|given\s+up|got\s+rid\s+of|traded\s+in"
    rf"|broke\s+up|split\s+up|closed\s+on|{_ADVERBS})\b",
    re.IGNORECASE,
)
_ADVERB_CHANGE = re.compile(_ADVERBS, re.IGNORECASE)
# A denial just before a change verb ("not moving", "never switched", "didn't quit").
_DENIED = re.compile(r"\b(?:not|never|no|n't)\b(?:\W+\w+){0,2}\W*$|n't\s+(?:\w+\s+){0,2}$", re.I)
# Where a clause starts: its subject is in the words after it.
_CLAUSE_START = re.compile(r"[,;:\u2014\u2013]|\s-\s|\b(?:and|but|so|because|while|when)\b", re.I)
# Who does what follows: a personal pronoun as subject, the speaker's or someone else's.
_PERSON = re.compile(r"\b(?:I|we|he|she|they|you|it)\b", re.IGNORECASE)
_FIRST_PERSON = frozenset({"i", "we"})
# Weighing a change is not telling one ("thinking about adopting a cat").
_WEIGHING = re.compile(r"\b(?:thinking\s+about|considering)\b", re.IGNORECASE)
# How many leaves said just before a change a question about "before" adds (it reads twice
# as many: some may belong to the session telling the change).
SAID_BEFORE = 3
_NAME = re.compile(r"^[^\W\d_][\w'-]*$")
# The parts of a name as a question's words hold them: runs of word characters.
_NAME_PART = re.compile(r"\w+")
# The instant just before a change: what held then is what it replaced.
_JUST_BEFORE = timedelta(microseconds=1)
# Words a question about "before" uses for the change itself or for "the one now", not for
# what came after it ("before he moved to ...", "before his current club").
_NOT_AFTER = frozenset(
    tokenize("moved started switched changed got went took became had current new present now")
)
_BEFORE_WORD = re.compile(
    r"\b(?:before|prior\s+to)\b\s+(?P<after>[^?.!]*)",
    re.IGNORECASE,
)


def asked_names(query: Query) -> frozenset[str]:
    """The names a question says, folded ("Aiko's niece Hana" -> aiko, hana): capitalised words
    that are no function word (so "Which", "Is" and "Does" are not names)."""
    return frozenset(
        word.casefold()
        for word in query.words
        if word[:1].isupper() and _NAME.match(word) and word.casefold() not in STOPWORDS
    )


def said_by_named(node: MemoryNode, names: frozenset[str]) -> bool:
    """Whether someone the question names says one of the node's messages (naming no one,
    the user)."""
    return any(_speaker_named(message, names) for message in node.messages)


def _speaker_named(message: SourceMessage, names: frozenset[str]) -> bool:
    """Whether the question names the speaker: every part of their name ("Mei-Ling" is
    asked as "Mei" and "Ling", the runs of word characters `asked_names` reads)."""
    if not names:
        return message.role == "user"
    parts = _NAME_PART.findall(message.speaker.casefold())
    return bool(parts) and names.issuperset(parts)


def tells_change(message: SourceMessage, names: frozenset[str]) -> bool:
    """Whether the message states a change of someone named: said by them or naming them in
    the same sentence, a statement with a change word, no plan or question. With no name
    asked ("Where do I live now?"), the user's own messages. Said by the person asked, the
    change must be theirs: a change verb denied ("I'm not moving it again") or done by
    someone they speak of ("She replaced the oven") tells none of theirs."""
    speaker_named = _speaker_named(message, names)
    for sentence in SENTENCE_BREAK.split(message.text):
        if sentence.rstrip().endswith("?") or not _CHANGE.search(sentence):
            continue
        if HYPOTHETICAL.search(sentence) or _WEIGHING.search(sentence):
            continue
        if names_any(sentence, names):
            return True
        if speaker_named and any(_own_change(sentence, m) for m in _CHANGE.finditer(sentence)):
            return True
    return False


def _own_change(sentence: str, change: re.Match[str]) -> bool:
    """Whether a change word in the speaker's sentence tells a change of theirs: an adverb
    ("no longer", "these days") always; a verb unless denied just before it or done by the
    nearest person before it in its clause other than the speaker."""
    if _ADVERB_CHANGE.fullmatch(change.group()):
        return True
    before = _CLAUSE_START.split(sentence[: change.start()])[-1]
    if _DENIED.search(before):
        return False
    people = _PERSON.findall(before)
    return not people or people[-1].casefold() in _FIRST_PERSON


def telling_leaves(
    memories: Iterable[RecalledMemory], names: frozenset[str], instant: datetime
) -> list[RecalledMemory]:
    """The leaves said by `instant` that tell a change of someone named."""
    return [
        m
        for m in memories
        if m.node.level is Level.SEGMENT
        and m.node.t_start <= instant
        and any(tells_change(message, names) for message in m.node.messages)
    ]


def told_change(
    memories: Iterable[RecalledMemory], names: frozenset[str], instant: datetime
) -> RecalledMemory | None:
    """The newest leaf said by `instant` that tells a change of someone named."""
    telling = telling_leaves(memories, names, instant)
    return max(telling, key=lambda m: (m.node.t_start, m.node.id), default=None)


def closed_by_told_change(
    memories: Sequence[RecalledMemory], names: frozenset[str], instant: datetime
) -> list[RecalledMemory]:
    """The memories, those with no validity that ended before the session of the newest told
    change valid until it (replaced by no fact: none was read). Others are left as they are.

    The session, not the leaf: the lines of one conversation are said together, and the new
    value is often named a line before the line with the change word ("Guess what I'm doing
    on Saturdays now: reading at the library", then "They moved sorting to weekdays")."""
    change = told_change(memories, names, instant)
    if change is None:
        return list(memories)
    since = session_start(change, memories)
    return [
        dataclasses.replace(m, validity=Validity(None, since, None, "inferred"))
        if m.validity is None and m.node.t_end < since
        else m
        for m in memories
    ]


def session_start(leaf: RecalledMemory, memories: Iterable[RecalledMemory]) -> datetime:
    """When the session of `leaf` began, as far as `memories` show: its earliest leaf's start."""
    if leaf.node.session_id is None:
        return leaf.node.t_start
    return min(
        (m.node.t_start for m in memories if _same_session(m, leaf)), default=leaf.node.t_start
    )


def before_instant(
    query: Query,
    versions: Sequence[AtomicFact],
    memories: Sequence[RecalledMemory],
    names: frozenset[str],
    when: datetime,
) -> datetime | None:
    """The instant a question about what held before a change asks about, named changes
    first: just before the earlier of the fact version whose value it names and the session
    that first names what it says came after ("before Tomás", "before she took up
    climbing"), else before the latest change of the versions, else before the newest told
    change. None when there is none of them."""
    # What came after was there by the first time either the facts or the memories name it.
    named = [t for t in (named_change(versions, query.term_set), first_named(query, memories)) if t]
    if named:
        return min(named)
    change = told_change(memories, names, when)
    told = change.node.t_start - _JUST_BEFORE if change is not None else None
    return latest_change(versions, when) or told


def first_named(query: Query, memories: Sequence[RecalledMemory]) -> datetime | None:
    """Just before the session whose leaves first name what the question says came after
    the change (the memories sharing most of those words); None when none does."""
    after = _after_terms(query)
    if not after:
        return None
    overlap = [(len(after & term_set(m.node.text)), m) for m in memories]
    best = max((n for n, _ in overlap), default=0)
    if not best:
        return None
    first = min((m for n, m in overlap if n == best), key=lambda m: m.node.t_start)
    # The change was told in the session that first names what followed it, perhaps in an
    # earlier line of it ("Preseason started" before "You switched clubs?").
    session = [m.node.t_start for m in memories if _same_session(m, first)]
    return min(session, default=first.node.t_start) - _JUST_BEFORE


def said_just_before(
    memories: Sequence[RecalledMemory],
    earlier: Sequence[MemoryNode],
    instant: datetime,
    room: int,
    *,
    displace: bool = True,
) -> tuple[list[RecalledMemory], int]:
    """For a question about what held before the change at `instant`: up to `SAID_BEFORE`
    leaves said just before it (of `earlier`, newest first, none of a session that goes on
    past it) that recall did not keep join the memories, in the `room` left and then, with
    `displace`, in place of the weakest leaves kept that were said after it, while they
    fit. Returns the memories and the tokens this adds (negative when it frees some)."""
    kept = list(memories)
    ids = {m.node.id for m in kept}
    after = sorted(
        (m for m in kept if m.node.level is Level.SEGMENT and m.node.t_end > instant),
        key=lambda m: m.score,
    )
    # A session going on across the instant is the change's: its lines tell the change.
    changing = {m.node.session_id for m in after if m.node.session_id is not None}
    if not displace:
        after = []
    floor = min((m.score for m in kept), default=0.0)
    added, joined = 0, 0
    for node in sorted(earlier, key=lambda n: n.t_end, reverse=True):
        if node.id in ids or node.level is not Level.SEGMENT or node.t_end > instant:
            continue
        if node.session_id in changing or joined == SAID_BEFORE:
            continue
        cost = count_tokens(node.text)
        while room - added < cost and after:
            dropped = after.pop(0)
            kept.remove(dropped)
            added -= count_tokens(dropped.node.text)
        if room - added < cost:
            break
        kept.append(RecalledMemory(node, floor))
        added, joined = added + cost, joined + 1
    return kept, added


def _after_terms(query: Query) -> frozenset[str]:
    """The stemmed content words after "before" in the question, less those said before it
    (whom and what it asks about) and the words that only say a change happened."""
    found = _BEFORE_WORD.search(query.text)
    if found is None:
        return frozenset()
    asked = set(tokenize(query.text[: found.start()]))
    return frozenset(tokenize(found.group("after"))) - asked - _NOT_AFTER


def _same_session(memory: RecalledMemory, anchor: RecalledMemory) -> bool:
    if anchor.node.session_id is None:
        return memory.node.id == anchor.node.id
    return memory.node.session_id == anchor.node.session_id and memory.node.level is Level.SEGMENT


def names_any(sentence: str, names: frozenset[str]) -> bool:
    """Whether the sentence names someone of `names` (a possessive counts)."""
    words = {w.casefold() for w in re.findall(r"[^\W\d_][\w'-]*", sentence)}
    words |= {w.removesuffix("'s") for w in words}
    # A hyphenated name is asked by its parts ("Mei-Ling's" names "mei" and "ling").
    if any(names.issuperset(_NAME_PART.findall(w)) for w in words if "-" in w):
        return True
    return not names.isdisjoint(words)
