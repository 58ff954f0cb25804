"""Values a change told in words says ended, and the memories that named them before it.

People tell an ending by naming what ended: "I quit keto", "sold the Jeep", "left the
Magpies", "nobody calls him Biscuit anymore", "gave up driving". That shape is the same in
any English conversation: an ending verb and its object, or a negated statement closed by
"anymore". When the person asked about tells such an ending, what was said of that value
before it held at most until it: "the shelter called him Biscuit" in May is no longer what
the dog is called once "nobody calls him Biscuit anymore" is said in June, though the leaf
still states a fact that holds ("Grace has a dog").

For a question about now, `closed_by_ended_values` gives those earlier memories a validity
ending at the telling (`end_basis` "inferred": no fact replaced them). A memory naming a
value that still holds, other than one the question itself names ("dog" in "What is Grace's
dog called?" is no answer), is left as it is: it may state the new value as well. Like the
other rules on told changes, it runs after recall's fit and never changes what recall
keeps. Pure, standard library only.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from datetime import datetime

from memstream.domain.fact_extraction import SENTENCE_BREAK
from memstream.domain.fact_grammar import HYPOTHETICAL
from memstream.domain.facts import AtomicFact
from memstream.domain.lexical import term_set
from memstream.domain.memory_validity import excludes
from memstream.domain.models import Level, SourceMessage
from memstream.domain.ranking import RecalledMemory
from memstream.domain.validity import Validity

_OWNER = r"(?:my|our|his|her|their)"
_ARTICLE = r"(?:my|our|his|her|their|the|a|an)"
# A name ("the Marrickville Magpies") or, after an owner or article, the word it introduces
# ("my ceramics", "the car"), or a bare word ("keto", "meat").
_NAME = r"[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*"
_WORD = r"[^\W\d_][\w'-]*"
# Verbs that end what follows them. "left" and "stopped" take many objects that end nothing
# ("left the hob on", "stopped the car"), so with them only a name or something owned counts.
_ENDING = re.compile(
    r"\b(?:quit|quitting|sold|selling|dropped|ditched|gave\s+up|given\s+up|giving\s+up"
    r"|got\s+rid\s+of|broke\s+up\s+with|split\s+up\s+with|moved\s+out\s+of|moved\s+away\s+from"
    r"|switched\s+from|changed\s+from|traded\s+in|cancell?ed|no\s+longer\s+(?:have|has|own"
    r"|owns|eat|eats|play|plays|drive|drives|use|uses|do|does))"
    rf"\s+(?:on\s+)?(?:{_ARTICLE}\s+)?(?P<what>{_NAME}|{_WORD})"
)
_ENDING_NAMED = re.compile(
    rf"\b(?:left|leaving|stopped)\s+(?:(?:the\s+)?(?P<name>{_NAME})|{_OWNER}\s+(?P<own>{_WORD}))"
)
# "nobody calls him Biscuit anymore", "I don't eat meat any more": the word before it.
_NEGATION = re.compile(r"\b(?:not|no|never|nobody|none|nothing)\b|n't\b", re.IGNORECASE)
_ANYMORE = re.compile(rf"(?P<what>{_WORD})\s+(?:anymore|any\s+more)\b")


def ended_terms(message: SourceMessage) -> frozenset[str]:
    """The stemmed words of what the message's statements say ended (none for a question or
    a plan)."""
    ended: set[str] = set()
    for sentence in SENTENCE_BREAK.split(message.text):
        if sentence.rstrip().endswith("?") or HYPOTHETICAL.search(sentence):
            continue
        for found in _ENDING.finditer(sentence):
            ended |= term_set(found.group("what"))
        for found in _ENDING_NAMED.finditer(sentence):
            ended |= term_set(found.group("name") or found.group("own"))
        if _NEGATION.search(sentence):
            for found in _ANYMORE.finditer(sentence):
                ended |= term_set(found.group("what"))
    return frozenset(ended)


def closed_by_ended_values(
    memories: Sequence[RecalledMemory],
    telling: Sequence[RecalledMemory],
    versions: Sequence[AtomicFact],
    asked_terms: frozenset[str],
    instant: datetime,
) -> list[RecalledMemory]:
    """The memories, those said before a leaf of `telling` (the leaves that tell a change of
    the person asked, by `instant`) that name what it says ended (no word the question
    names) valid until it; a memory already stale at `instant`, or naming a value holding
    then (the question's own words aside), is left as it is."""
    # A word the question names says which slot, not which value ("sold the car" for
    # "What car does she drive?").
    endings = [
        (leaf.node.t_start, _leaf_ended(leaf) - asked_terms)
        for leaf in telling
        if leaf.node.level is Level.SEGMENT and leaf.node.t_start <= instant
    ]
    endings = [(since, terms) for since, terms in endings if terms]
    if not endings:
        return list(memories)
    holding = _holding_terms(versions, instant, asked_terms)
    closed = []
    for memory in memories:
        words = term_set(memory.node.text)
        ends = [
            since
            for since, terms in endings
            if memory.node.t_end < since and not terms.isdisjoint(words)
        ]
        if not ends or excludes(memory.validity, instant) or any(h <= words for h in holding):
            closed.append(memory)
            continue
        began = memory.validity.valid_from if memory.validity is not None else None
        closed.append(
            dataclasses.replace(memory, validity=Validity(began, min(ends), None, "inferred"))
        )
    return closed


def _leaf_ended(leaf: RecalledMemory) -> frozenset[str]:
    return frozenset().union(*(ended_terms(message) for message in leaf.node.messages))


def _holding_terms(
    versions: Sequence[AtomicFact], instant: datetime, asked_terms: frozenset[str]
) -> list[frozenset[str]]:
    """The words of each value holding at `instant` that the question does not name itself."""
    holding = []
    for version in versions:
        ended = version.valid_to is not None and version.valid_to <= instant
        if version.negated or version.valid_from > instant or ended:
            continue
        value = term_set(version.value)
        if value and not value <= asked_terms:
            holding.append(value)
    return holding
