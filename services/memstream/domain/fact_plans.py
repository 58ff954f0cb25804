"""A change told as scheduled, read as the change it will be: "I'm joining Wipro next month".

English tells a change fixed for a time ahead in the progressive ("we're moving to Leeds in
March"), the simple present ("I start at Ocado on Monday") or with "will" ("she'll join the
team next week"). The fact patterns read changes told as done ("moved to", "joined",
"started"): a sentence naming a time ahead (`fact_time.starts_at`) has the verb of such a
change put in the past, so every pattern reads it, and the facts of its clause begin at that
time, not when it was said. A plan still weighed ("going to", "planning", "might") stays a
hypothetical (`fact_grammar`), and a sentence naming no time ahead is left as it is: without
a start, a scheduled change could not be told from a habit ("I start at nine").

Pure, standard library only.
"""

from __future__ import annotations

import re
from datetime import datetime

from memstream.domain.alternation import longest_first
from memstream.domain.fact_time import starts_at

# The changes the patterns read, each verb's forms mapped to its past.
_PAST = {
    "join": "joined", "move": "moved", "relocate": "relocated", "start": "started",
    "begin": "began", "leave": "left", "quit": "quit", "adopt": "adopted", "retire": "retired",
}  # fmt: skip
_PROGRESSIVE = {
    "joining": "join", "moving": "move", "relocating": "relocate", "starting": "start",
    "beginning": "begin", "leaving": "leave", "quitting": "quit", "adopting": "adopt",
    "retiring": "retire", "getting": "get",
}  # fmt: skip
_THIRD_PERSON = {
    "joins": "join", "moves": "move", "relocates": "relocate", "starts": "start",
    "begins": "begin", "leaves": "leave", "quits": "quit", "adopts": "adopt",
    "retires": "retire",
}  # fmt: skip
_ADV = r"(?P<adv>(?:just|finally|officially|also|actually|both)\s+)?"


# "I'm joining", "we're moving", "she's starting", "my brother is leaving".
_BE_ING = re.compile(
    rf"(?:'m|'re|'s|\s+am|\s+are|\s+is)\s+{_ADV}(?P<verb>{longest_first(_PROGRESSIVE)})\b",
    re.IGNORECASE,
)
# "I'll join", "we will be moving"; "I'll be working at" holds a state, read as "I working".
_WILL = re.compile(
    rf"(?:'ll|\s+will)\s+(?:be\s+)?{_ADV}"
    rf"(?P<verb>{longest_first([*_PROGRESSIVE, *_PAST])}|working|living|studying)\b",
    re.IGNORECASE,
)
# "I start", "we move", "she joins", "Ana starts": a subject word, then the verb.
_SIMPLE = re.compile(
    r"\b(?P<who>I|[Ww]e|[Tt]hey|[Hh]e|[Ss]he|(?:[Mm]y|[Oo]ur)\s+[a-z]+|[A-Z][a-z]+)\s+"
    rf"{_ADV}(?P<verb>{longest_first([*_PAST, *_THIRD_PERSON])})\b"
)


def scheduled(sentence: str, said_at: datetime) -> tuple[str, bool]:
    """The sentence with the verb of each change it tells as scheduled put in the past, and
    whether it told one; as it is when it names no time ahead of `said_at`."""
    told = _SIMPLE.sub(_simple_past, sentence)
    told = _BE_ING.sub(_past, told)
    told = _WILL.sub(_past, told)
    # The verbs first: most sentences tell no change, and resolving their times is the
    # costlier test (the segmenter reads every L1's sentences).
    if told == sentence or starts_at(sentence, said_at) is None:
        return sentence, False
    return told, True


def _past_of(verb: str) -> str:
    word = verb.lower()
    if word in {"working", "living", "studying"}:
        return word  # "I'll be working at X from May": "I working at X", a state from then
    if word == "getting":
        return "got"
    base = _PROGRESSIVE.get(word) or _THIRD_PERSON.get(word) or word
    return _PAST.get(base, "got" if base == "get" else base)


def _past(match: re.Match[str]) -> str:
    return f" {match['adv'] or ''}{_past_of(match['verb'])}"


def _simple_past(match: re.Match[str]) -> str:
    return f"{match['who']} {match['adv'] or ''}{_past_of(match['verb'])}"
