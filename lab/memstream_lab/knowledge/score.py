"""Score recall (or a facts route) on knowledge-update questions.

A question passes when both hold:

1. **The value true at the asked time comes first.** Walk the ranked items in order and take the
   first one that *presents* any candidate value (an accepted form of the expected value, a
   superseded value, or a distractor: a value true of someone else, such as the user's own city
   for a question about her brother's) as holding at the asked time; it must present an
   accepted form of the expected value. An item naming both old and new values ("moved from
   Porto to Berlin") passes this step: it answers the question.
2. **No superseded value is presented as current** (questions about now only: ``current`` and
   ``other_person``). Any item, at any rank, that presents a superseded value as holding now
   fails the question. Distractors may appear anywhere after the answer: they are true, of
   someone else.

An item mentions a value when the value's words appear in its text as whole words, ignoring case
and accents. A mention does not *present* the value as holding at time ``t`` when the item says
otherwise:

- with a ``query_time``: its validity excludes it (``valid_to`` at or before it, or
  ``valid_from`` after it);
- for questions about now: it carries a ``valid_to`` or a ``superseded_by``, or (for a
  superseded value) the sentence naming it has a past marker ("used to", "before", "no longer",
  "moved from", ...).

Questions about the past (``previous``, ``past``) only use step 1: a current value shown without
dates is true now, not a claim about the past, so it is not counted against them unless it comes
first.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

KINDS = ("current", "previous", "past", "other_person")
# Kinds whose answer is the value that holds now: superseded values shown as current fail them.
ABOUT_NOW = frozenset({"current", "other_person"})

# Words that, in the sentence naming a value, say the value no longer holds: tense and change
# verbs of any English conversation, not one set's phrasing. Checked on LoCoMo and on the set,
# which is why some verbs only count with an object ("quit my", "dropped the"): bare "quit",
# "before", "any more", "old", "left" and "until" fire on "don't quit!", "have you been
# before?", "any more tips?", "fifteen years old", "left the hob on" and "up until three".
PAST_MARKERS = (
    "used to",
    "previously",
    "formerly",
    "former",
    "no longer",
    "no more",
    "not anymore",
    "anymore",
    "back then",
    "at the time",
    "before that",
    # A label, as memstream's profiles and prompts write a replaced value: "(since April
    # 2024; before: Porto)". The colon keeps "have you been before?" out.
    "before:",
    "before moving",
    "before the move",
    "my old",
    "our old",
    "the old",
    "ex",
    "moved from",
    "moved out",
    "switched from",
    "changed from",
    "replaced",
    "instead of",
    "gave up",
    "given up",
    "gave away",
    "got rid of",
    "i quit",
    "quit my",
    "quit the",
    "stopped",
    "dropped the",
    "i cancelled",
    "cancelled my",
    "cancelled the",
    "sold",
    "selling my",
    "selling the",
    "split up",
    "broke up",
    "goodbye",
)
# "getting used to a new routine" is about adapting, not about the past.
_NOT_HABITUAL = r"(?<!get )(?<!gets )(?<!got )(?<!getting )(?<!be )(?<!been )"
_PAST_MARKER_PATTERNS = tuple(
    re.compile(rf"(?<!\w){_NOT_HABITUAL if m == 'used to' else ''}{re.escape(m)}(?!\w)")
    for m in PAST_MARKERS
)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")


@dataclass(frozen=True)
class Question:
    """One question of the set, as the scorer needs it."""

    kind: str
    expected: tuple[str, ...]
    superseded: tuple[str, ...]
    query_time: datetime | None = None
    distractors: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {self.kind!r}")
        if not self.expected:
            raise ValueError("a question needs at least one accepted form of its answer")


@dataclass(frozen=True)
class ReturnedItem:
    """One ranked item a system returned: a memory or a fact, with its validity if it has one."""

    text: str
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_by: str | None = None


@dataclass(frozen=True)
class QuestionScore:
    """The verdict on one question and why."""

    kind: str
    first_is_expected: bool
    superseded_as_current: bool

    @property
    def passed(self) -> bool:
        return self.first_is_expected and not self.superseded_as_current


def fold(text: str) -> str:
    """Lower case without accents, so "Málaga" matches "malaga"."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _value_pattern(value: str) -> re.Pattern[str]:
    words = fold(value).split()
    return re.compile(r"(?<!\w)" + r"\s+".join(re.escape(w) for w in words) + r"(?!\w)")


def mentions(text: str, value: str) -> bool:
    """Whether the value's words appear in the text as whole words."""
    return bool(value.strip()) and _value_pattern(value).search(fold(text)) is not None


def says_past(text: str, value: str) -> bool:
    """Whether a sentence naming the value also carries a past marker."""
    pattern = _value_pattern(value)
    for sentence in _SENTENCE_END.split(fold(text)):
        if pattern.search(sentence) and any(p.search(sentence) for p in _PAST_MARKER_PATTERNS):
            return True
    return False


def _validity_excludes(item: ReturnedItem, at: datetime) -> bool:
    if item.valid_to is not None and item.valid_to <= at:
        return True
    return item.valid_from is not None and item.valid_from > at


def presents(item: ReturnedItem, value: str, question: Question, *, stale: bool) -> bool:
    """Whether the item offers the value as holding at the question's time.

    Past markers only excuse a ``stale`` (superseded) value: a sentence such as "moved from
    Porto to Berlin" marks Porto as past and still states Berlin.
    """
    if not mentions(item.text, value):
        return False
    if question.query_time is not None:
        return not _validity_excludes(item, question.query_time)
    if question.kind in ABOUT_NOW:
        closed = item.valid_to is not None or item.superseded_by is not None
        return not closed and not (stale and says_past(item.text, value))
    # "previous": the value is expected to be closed, so nothing about it is held against it.
    return True


def score_question(question: Question, items: Sequence[ReturnedItem]) -> QuestionScore:
    """Judge one question against the ranked items a system returned for it."""
    first_is_expected = False
    for item in items:
        if any(presents(item, v, question, stale=False) for v in question.expected):
            first_is_expected = True
            break
        if any(presents(item, v, question, stale=True) for v in question.superseded):
            break
        if any(presents(item, v, question, stale=False) for v in question.distractors):
            break
    superseded_as_current = question.kind in ABOUT_NOW and any(
        presents(item, v, question, stale=True) for item in items for v in question.superseded
    )
    return QuestionScore(question.kind, first_is_expected, superseded_as_current)


def shares_by_kind(scores: Iterable[QuestionScore]) -> dict[str, float]:
    """Share of passed questions per kind and over all (``"all"``); absent kinds are left out."""
    totals: dict[str, list[int]] = {}
    for score in scores:
        for key in (score.kind, "all"):
            passed_and_total = totals.setdefault(key, [0, 0])
            passed_and_total[0] += score.passed
            passed_and_total[1] += 1
    return {kind: passed / total for kind, (passed, total) in totals.items()}
