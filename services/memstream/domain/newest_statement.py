"""For a question about now, the newest of the statements the search found most like it.

The gate keeps the memories that share the question's words, and a change is seldom told
in them: asked "What sport does she do now?", it keeps "no contact sport ever again" from
two years ago and leaves out "We won our first regatta", which the search (dense and
lexical) ranked among the question's strongest candidates. People restate what holds in
new words, so of the strongest candidate leaves about the person asked, the newest is the
likeliest to say what holds now. When it was said after everything of theirs recall kept,
it joins in the room the fit left (taking no kept memory's place, so what recall keeps
otherwise is unchanged), and the memories with no validity said before its session held
at most until then: end basis "inferred", replaced by no fact, as a change told in words
closes them (`told_changes.closed_by_told_change`). Only where no fact answers the
question: a fact outranks a guess from the search's order. Pure, standard library only.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from datetime import datetime

from memstream.domain.models import Level, MemoryNode
from memstream.domain.query import Query
from memstream.domain.ranking import RecalledMemory
from memstream.domain.tokens import count_tokens
from memstream.domain.told_changes import asked_names, names_any, said_by_named
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


def newest_strong_leaf(
    candidates: Sequence[RecalledMemory],
    kept: Sequence[RecalledMemory],
    names: frozenset[str],
    instant: datetime,
    strongest: int = STRONGEST,
) -> RecalledMemory | None:
    """The newest of the `strongest` best-scored candidate leaves about the person asked,
    said by `instant`, when it began after every kept leaf about them ended; else None."""
    theirs = [
        m
        for m in candidates
        if m.node.level is Level.SEGMENT
        and m.node.t_start <= instant
        and about_named(m.node, names)
    ]
    strong = sorted(theirs, key=lambda m: (-m.score, m.node.id))[:strongest]
    newest = max(strong, key=lambda m: (m.node.t_start, m.node.id), default=None)
    if newest is None:
        return None
    kept_theirs = [
        m.node.t_end for m in kept if m.node.level is Level.SEGMENT and about_named(m.node, names)
    ]
    if any(end >= newest.node.t_start for end in kept_theirs):
        return None
    return newest


def with_newest_statement(
    memories: Sequence[RecalledMemory],
    candidates: Sequence[RecalledMemory],
    names: frozenset[str],
    instant: datetime,
    room: int,
) -> tuple[list[RecalledMemory], int]:
    """The memories with the newest strong candidate leaf (`newest_strong_leaf`) joined when
    it fits in `room`, and those with no validity said before it valid until it began.
    Returns them and the tokens added."""
    newest = newest_strong_leaf(candidates, memories, names, instant)
    if newest is None:
        return list(memories), 0
    cost = count_tokens(newest.node.text)
    if cost > room:
        return list(memories), 0
    since = newest.node.t_start
    floor = min((m.score for m in memories), default=newest.score)
    closed = [
        dataclasses.replace(m, validity=Validity(None, since, None, "inferred"))
        if m.validity is None and m.node.t_end < since
        else m
        for m in memories
    ]
    return [*closed, dataclasses.replace(newest, score=floor)], cost
