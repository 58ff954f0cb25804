"""A recall query, parsed once at the edge of recall into the value every stage reads.

The string is read here and nowhere else: its stemmed content terms (the lexical channel,
the gate, the summary signal, the trim of summaries), its words as written (whom it names),
the planner's cue words and keywords, whether it asks when or gathers facts, the time
range it names, and which state of a changing fact it asks for (`StateAsked`). Pure
functions and a frozen value, standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from memstream.domain.cues import asks_before, asks_now, asks_when, is_aggregative
from memstream.domain.lexical import STOPWORDS, tokenize
from memstream.domain.models import Complexity
from memstream.domain.timeexpr import TimeRange, resolve_time_range

_COMPLEX = re.compile(
    r"\b(why|how(?! (?:often|many|much|long|old|far)\b)|patterns?|usually|typically|tends?"
    r"|over time|summari[sz]e|what kinds? of|personality|traits?|values|likely|prefer\w*)\b"
    r"|^\s*(would|might|could)\b",
    re.IGNORECASE,
)
_HYBRID = re.compile(
    r"\b(when|how often|how many|how long|before|after|since|until|first|last|latest|earlier"
    r"|later|recently|ago|date|years?|months?|weeks?|days?|yesterday|today|tomorrow|weekend"
    r"|during|between)\b",
    re.IGNORECASE,
)
# The planner's words keep inner hyphens and apostrophes ("LGBTQ-friendly", "Caroline's");
# letters and digits of any script (on ASCII, exactly `[A-Za-z0-9][A-Za-z0-9'-]*`).
_PLANNER_WORD = re.compile(r"[^\W_](?:[^\W_]|['-])*")
# Runs of word characters: a name written in the query is one of them (or several in a row).
_WORD = re.compile(r"\w+")
# Words that shape a question rather than name what a memory would contain.
_QUESTION_WORDS = frozenset(
    {
        "often",
        "kind",
        "kinds",
        "sort",
        "type",
        "many",
        "much",
        "long",
        "likely",
        "usually",
        "ever",
        "both",
    }
)
# Which state of a fact that changes a question asks for: the one holding at the query time
# ("now": "Where does Maya live these days?"), the one a change replaced ("before": "Where
# did she live before Berlin?"), or the one holding in a time the question names ("then":
# "Where was she living in June 2023?"). None: the question asks for no state.
StateAsked = Literal["now", "before", "then"]


@dataclass(frozen=True, slots=True)
class Query:
    text: str  # as asked: what the embedder and a language model read
    terms: tuple[str, ...]  # stemmed content words, in order (`lexical.tokenize`)
    words: tuple[str, ...]  # runs of word characters as written, case kept
    keywords: tuple[str, ...]  # content words, lower case but names as written (the planner's)
    complexity: Complexity  # how much of the tree the wording asks for
    asks_when: bool  # it asks for a time ("When did ...", "How long ago ...")
    aggregative: bool  # it gathers facts from across the history
    time_range: TimeRange | None  # the time it names, resolved against the query time
    state: StateAsked | None = None  # which state of a changing fact it asks for

    @property
    def term_set(self) -> frozenset[str]:
        return frozenset(self.terms)

    def people_named(self, people: Iterable[str]) -> list[str]:
        """The given people the query names (whole first name, case as written), in order."""
        found: list[str] = []
        for person in dict.fromkeys(people):
            first = person.split()[0] if person.split() else person
            if first and _holds_run(self.words, tuple(_WORD.findall(first))):
                found.append(person)
        return found

    def terms_without(self, people: Iterable[str]) -> frozenset[str]:
        """The query's stemmed content terms, without the names of the given people."""
        names = {t for person in people for t in tokenize(person)}
        return self.term_set - names


def parse_query(text: str, now: datetime | None = None) -> Query:
    """`text` read once; relative times resolve against `now` (the present when None)."""
    complexity, keywords = _plan(text)
    time_range = resolve_time_range(text, now or datetime.now(UTC))
    return Query(
        text=text,
        terms=tuple(tokenize(text)),
        words=tuple(_WORD.findall(text)),
        keywords=keywords,
        complexity=complexity,
        asks_when=asks_when(text),
        aggregative=is_aggregative(text),
        time_range=time_range,
        state=_state_asked(text, time_range),
    )


def _state_asked(text: str, time_range: TimeRange | None) -> StateAsked | None:
    """Which state: a time the question names ("two weeks before 11 August" is a time, not a
    change), then a change's "before" ("What did she drive before her current car?" names
    now too), then a question set in the present."""
    if time_range is not None:
        return "then"
    if asks_before(text):
        return "before"
    return "now" if asks_now(text) else None


def _plan(text: str) -> tuple[Complexity, tuple[str, ...]]:
    """Complexity by cue words, keywords = the content words (names kept as written)."""
    words = [w.removesuffix("'s") for w in _PLANNER_WORD.findall(text)]
    names = {w for w in words[1:] if w[0].isupper() and w != "I"}
    complexity: Complexity = "simple"
    if _COMPLEX.search(text):
        complexity = "complex"
    elif _HYBRID.search(text) or len(names) >= 2:
        complexity = "hybrid"
    keywords: dict[str, str] = {}
    for word in words:
        if word.lower() in STOPWORDS or word.lower() in _QUESTION_WORDS or len(word) < 2:
            continue
        keywords.setdefault(word.lower(), word if word in names else word.lower())
    return complexity, tuple(keywords.values())


def _holds_run(words: tuple[str, ...], run: tuple[str, ...]) -> bool:
    """Whether `run` stands in `words` as consecutive words. For a name of word characters
    this is what `\\bname\\b` finds in the text; a name joined by other characters
    ("Mary-Jane") is found as its parts in a row."""
    if not run:
        return False
    width = len(run)
    return any(words[i : i + width] == run for i in range(len(words) - width + 1))
