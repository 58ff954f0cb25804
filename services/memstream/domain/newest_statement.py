"""For a question about now, the newest of the statements the search found most like it.

The gate keeps the memories that share the question's words, and a change is seldom told
in them: asked "What sport does she do now?", it keeps "no contact sport ever again" from
two years ago and leaves out "We won our first regatta", which the search (dense and
lexical) ranked among the question's strongest candidates. People restate what holds in
new words, so of the strongest candidate leaves about the person asked, the newest is the
likeliest to say what holds now. When it was said after everything of theirs recall kept,
it joins in the room the fit left (taking no kept memory's place, so what recall keeps
otherwise is unchanged). The other strongest leaves with no validity, said before its
session, held at most until then: end basis "inferred", replaced by no fact, as a change
told in words closes them (`told_changes.closed_by_told_change`). When recall kept the
newest already, it closes those of them that share a word with it: beside older
statements, the gate often keeps a line of the latest session for the question's words
("Then crew for me!"), and a line about something else must not close them. Only the
strongest leaves about the person are closed, never a memory about another thing the
question does not ask. Only where no fact answers the question: a fact outranks a guess
from the search's order. Pure, standard library only.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from datetime import datetime

from memstream.domain.lexical import STOPWORDS, term_set
from memstream.domain.models import Level, MemoryNode
from memstream.domain.query import Query
from memstream.domain.ranking import RecalledMemory
from memstream.domain.tokens import count_tokens
from memstream.domain.told_changes import asked_names, names_any, said_by_named, session_start
from memstream.domain.validity import Validity

# How many of the strongest candidate leaves about the person asked are weighed: beyond the
# first few, the newest is as often small talk of the latest session as a statement of what
# was asked (chosen on ku01-ku34: 3 passed one question more than 5 or 8).
STRONGEST = 3
# A name followed by a possessive: its owner ("Hamid's brother").
_OWNER = re.compile(r"\b(\w+)'s\b")


def asked_subjects(query: Query) -> frozenset[str]:
    """The people a question asks about (`told_changes.asked_names`), less those named only
    as someone's owner when another is named: "Aino's old flatmate Veera" asks about Veera,
    "Hamid's brother Reza" about Reza."""
    names = asked_names(query)
    owners = {m.group(1).casefold() for m in _OWNER.finditer(query.text)}
    others = names - owners
    return others if others else names


def about_named(node: MemoryNode, names: frozenset[str]) -> bool:
    """Whether someone the question names says one of the leaf's messages or is named in
    it (naming no one, the user's messages)."""
    if said_by_named(node, names):
        return True
    return bool(names) and any(names_any(m.text, names) for m in node.messages)


def strongest_leaves(
    candidates: Sequence[RecalledMemory],
    names: frozenset[str],
    instant: datetime,
    strongest: int,
) -> list[RecalledMemory]:
    """The `strongest` best-scored candidate leaves about the person asked, said by
    `instant`, best first."""
    theirs = [
        m
        for m in candidates
        if m.node.level is Level.SEGMENT
        and m.node.t_start <= instant
        and about_named(m.node, names)
    ]
    return sorted(theirs, key=lambda m: (-m.score, m.node.id))[:strongest]


def newest_of(memories: Sequence[RecalledMemory]) -> RecalledMemory | None:
    """The memory said last (None for none)."""
    return max(memories, key=lambda m: (m.node.t_start, m.node.id), default=None)


def newest_strong_leaf(
    candidates: Sequence[RecalledMemory],
    kept: Sequence[RecalledMemory],
    names: frozenset[str],
    instant: datetime,
    strongest: int = STRONGEST,
) -> RecalledMemory | None:
    """The newest of the `strongest` best-scored candidate leaves about the person asked,
    said by `instant`, when it began after every kept leaf about them ended; else None."""
    newest = newest_of(strongest_leaves(candidates, names, instant, strongest))
    if newest is None:
        return None
    kept_theirs = [
        m.node.t_end for m in kept if m.node.level is Level.SEGMENT and about_named(m.node, names)
    ]
    if any(end >= newest.node.t_start for end in kept_theirs):
        return None
    return newest


def closed_by_newest(
    memories: Sequence[RecalledMemory],
    newest: RecalledMemory,
    closing: Sequence[RecalledMemory],
) -> list[RecalledMemory]:
    """The memories, those of `closing` with no validity that ended before the session of
    `newest` valid until that session began; the others as they are. The session, not the
    leaf: its lines are said together (`told_changes.closed_by_told_change`)."""
    since = session_start(newest, memories)
    ids = {m.node.id for m in closing}
    return [
        dataclasses.replace(m, validity=Validity(None, since, None, "inferred"))
        if m.node.id in ids and m.validity is None and m.node.t_end < since
        else m
        for m in memories
    ]


def shares_words(memory: RecalledMemory, newest: RecalledMemory, names: frozenset[str]) -> bool:
    """Whether the two leaves' messages share a content word other than the names asked."""
    return not (said_words(newest.node) - names).isdisjoint(said_words(memory.node))


def said_words(node: MemoryNode) -> frozenset[str]:
    """The content words of the leaf's messages (not its date or its speakers' labels),
    less contractions: "she's" is indexed as "she", a function word."""
    terms = term_set(" ".join(m.text for m in node.messages))
    return frozenset(t for t in terms if t not in STOPWORDS and "'" not in t)


def with_newest_statement(
    memories: Sequence[RecalledMemory],
    candidates: Sequence[RecalledMemory],
    names: frozenset[str],
    instant: datetime,
    room: int,
) -> tuple[list[RecalledMemory], int]:
    """The memories with the newest strong candidate leaf (`newest_strong_leaf`) joined when
    it fits in `room`, the other strongest leaves kept with no validity said before its
    session valid until that began; when recall kept the newest already, those of them
    that share a word with it (`shares_words`). Returns the memories and the tokens added."""
    strong = strongest_leaves(candidates, names, instant, STRONGEST)
    newest = newest_of(strong)
    if newest is not None and newest.node.id in {m.node.id for m in memories}:
        alike = [m for m in strong if shares_words(m, newest, names)]
        return closed_by_newest(memories, newest, alike), 0
    joining = newest_strong_leaf(candidates, memories, names, instant)
    if joining is None:
        return list(memories), 0
    cost = count_tokens(joining.node.text)
    if cost > room:
        return list(memories), 0
    floor = min((m.score for m in memories), default=joining.score)
    closed = closed_by_newest(memories, joining, strong)
    return [*closed, dataclasses.replace(joining, score=floor)], cost
