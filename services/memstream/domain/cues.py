"""Cues a query gives about what to recall, read without an LLM: pure functions.

`domain/query.py` reads them once, when it parses the query; stages read the parsed value.

- Who and What (`Query.people_named`, `Query.terms_without`): the people a query names
  among the speakers of the candidates, and its content terms but their names.
- When: whether a query asks for a time ("When did ...", "How long ago ...", "What
  year ..."), so that a summary's resolved dates are worth returning beside their leaves.
- How much: whether a query gathers facts scattered over the history ("What activities
  does Melanie partake in?", "Where has Melanie camped?", "How many times ...?") rather
  than asking for one fact. Such questions need more memories, so they deserve a larger
  share of the token budget, which a single precise question does not need.
"""

from __future__ import annotations

import re

# What|Which + a plural noun ("What activities", "Which books"), or a plural noun phrase
# before its verb ("What video games does", "Which European countries has"), "what kinds of",
# "What are X's hobbies", present perfect over the history ("Where has X camped?"), counts,
# "both".
_AGGREGATE = re.compile(
    r"""^\s*(?:what|which)\s+(?:kinds?|types?|sorts?)\s+of\b
      |^\s*(?:what|which)\s+(?!(?:is|was|does|has|this|kinds?|types?|sorts?)\b)
           [a-z-]{3,}(?<![su's])s\b
      |^\s*(?:what|which)\s+(?:[a-z-]+\s+){1,2}?[a-z/-]{2,}(?<![su's])s
           \s+(?:has|have|had|does|do|did|is|are|was|were|can|could|would|will)\b
      |^\s*what\s+are\b
      |^\s*(?:what|where|which|who)\s+(?:has|have)\b
      |^\s*how\s+many\b
      |\bboth\b
      |\bin\s+what\s+ways\b""",
    re.IGNORECASE | re.VERBOSE,
)


_WHEN = re.compile(
    r"\bwhen\b|\bhow\s+long\s+ago\b|\b(?:what|which)\s+(?:date|day|week|weekend|month|year|time)\b",
    re.IGNORECASE,
)


def asks_when(query: str) -> bool:
    """Whether the query asks when something happened (or will)."""
    return _WHEN.search(query) is not None


def is_aggregative(query: str) -> bool:
    """Whether the query gathers several facts from across the history."""
    return _AGGREGATE.search(query) is not None


# What holds now: words that set a question in the present, whatever its verb.
_NOW = re.compile(
    r"\b(?:now(?!\s+and\s+then)|currently|current|still|these\s+days|nowadays|at\s+the\s+moment"
    r"|at\s+present|presently|right\s+now|anymore|any\s+more)\b",
    re.IGNORECASE,
)
# What held before what holds now: the value a change replaced.
_BEFORE = re.compile(
    r"\b(?:before|previous(?:ly)?|used\s+to|formerly|former|prior\s+to|originally|at\s+first)\b",
    re.IGNORECASE,
)
# The first auxiliary of a question sets its tense: "Where does she live?" asks about now,
# "Where did she live?" about then. "has"/"have" ask across the history ("Where has she
# camped?"), a future ("is going to", "will") about what is planned: neither is a state now.
_AUXILIARY = re.compile(
    r"\b(does|do|is|are|am|isn't|aren't|doesn't|don't|did|was|were|had|has|have|will|would"
    r"|could|should|can|might)\b",
    re.IGNORECASE,
)
_PRESENT = frozenset({"does", "do", "is", "are", "am", "isn't", "aren't", "doesn't", "don't"})
# "What's Rosa's job?", "Who's Karim?": a question word's "is", as chat writes it ("who's
# been" is a perfect, no state).
_WH_IS = re.compile(r"\b(?:who|what|where|which|how)['\u2019]s\b(?!\s+been\b)", re.IGNORECASE)
_FUTURE = re.compile(r"\b(?:going\s+to|gonna|planning|plan\s+to|will)\b", re.IGNORECASE)


def asks_now(query: str) -> bool:
    """Whether the query asks what holds at its time: a word that says so ("now", "still",
    "these days") or a present-tense question ("Where does Maya live?") that is neither
    about a time ("When is ...") nor about a plan ("What is she going to ...")."""
    if _NOW.search(query):
        return True
    if asks_when(query) or _FUTURE.search(query):
        return False
    auxiliary = _AUXILIARY.search(query)
    if auxiliary is None:
        return _WH_IS.search(query) is not None
    return auxiliary.group(1).lower() in _PRESENT


def asks_before(query: str) -> bool:
    """Whether the query asks what held before a change ("before Berlin", "used to")."""
    return _BEFORE.search(query) is not None
