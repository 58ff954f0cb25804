"""Relative time in what someone said, anchored to when they said it.

"I went to a support group yesterday", said on 8 May 2023, happened on 7 May 2023; read a
month later the word "yesterday" no longer says when. A summary fact carries what its time
expressions resolve to: `(yesterday: 7 May 2023)`. Leaves stay verbatim; summaries are
where facts get normalised.

An expression that names one day or one month ("yesterday", "three days ago", "last
month", "next year") resolves to it. One whose exact span English leaves open ("last week"
may be the week before or the days just past; "last Friday" may be the Friday of this week
or of the one before) is anchored instead of guessed: "the week before 9 June 2023", "the
Friday before 15 July 2023". "Today" and "tonight" are left alone: every level prints the
date a fact was said beside it (a session's header, a week's day labels, a profile bullet's
date).

This is also how a query's relative times are read (`domain/timeexpr.py`): each expression
resolves to its words for a summary and to the range they name for a query, from one match,
so what a summary dates a query finds. The range of an anchored expression is the one its
words name: "the week before 9 June 2023" is 2-8 June, "the Friday before 15 July 2023" is
14 July. Pure functions, standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memstream.domain.calendar import (
    MONTH_NAMES,
    TimeRange,
    day_range,
    month_range,
    spelled_day,
    year_range,
)

_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# A weekday in full, in any case, or abbreviated as people do in chat ("last Fri", "last
# tues"); "Mon", "Wed", "Sat" and "Sun" only capitalised, as "when I last sat down" is no
# Saturday. The pattern is matched case-sensitively (the flags are scoped).
_WEEKDAY = (
    r"(?P<weekday>(?i:monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    r"|tue|tues|thu|thur|thurs|fri)|Mon|Wed|Sat|Sun)"
)
_COUNT_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "couple of": 2,
}  # fmt: skip
_COUNT = (
    r"(?P<n>\d{1,2}|a couple of|couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
)

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, 0 if kind == "last_weekday" else re.IGNORECASE))
    for kind, pattern in (
        ("day_before", r"\b(?:yesterday|last night)\b"),
        ("day_after", r"\btomorrow\b"),
        ("days_ago", rf"\b{_COUNT}\s+days?\s+ago\b"),
        ("weeks_ago", rf"\b{_COUNT}\s+(?P<unit>weeks?|weekends?)\s+ago\b"),
        ("months_ago", rf"\b{_COUNT}\s+months?\s+ago\b"),
        ("years_ago", rf"\b{_COUNT}\s+years?\s+ago\b"),
        ("last_weekday", rf"\b(?i:last)\s+{_WEEKDAY}\b"),
        ("last_span", r"\b(?:last|this past|this last|past)\s+(?P<unit>week|weekend)\b"),
        ("this_span", r"\bthis\s+(?P<unit>week|weekend)\b"),
        ("next_span", r"\bnext\s+(?P<unit>week|weekend)\b"),
        ("month", r"\b(?P<which>last|this|next)\s+month\b"),
        ("year", r"\b(?P<which>last|this|next)\s+year\b"),
        ("season", r"\b(?P<which>last|this|next)\s+(?P<season>spring|summer|autumn|fall|winter)\b"),
    )
)

# The word each kind of expression cannot do without: a sentence without any is skipped
# before the thirteen patterns run, which together cost far more than a lookup per word.
_TRIGGERS: dict[str, frozenset[str]] = {
    "day_before": frozenset({"yesterday", "night"}),
    "day_after": frozenset({"tomorrow"}),
    "days_ago": frozenset({"ago"}),
    "weeks_ago": frozenset({"ago"}),
    "months_ago": frozenset({"ago"}),
    "years_ago": frozenset({"ago"}),
    "last_weekday": frozenset({"last"}),
    "last_span": frozenset({"last", "past"}),
    "this_span": frozenset({"this"}),
    "next_span": frozenset({"next"}),
    "month": frozenset({"month"}),
    "year": frozenset({"year"}),
    "season": frozenset({"spring", "summer", "autumn", "fall", "winter"}),
}
_TRIGGER_WORDS = frozenset().union(*_TRIGGERS.values())


@dataclass(frozen=True, slots=True)
class ResolvedTime:
    phrase: str  # the words as spoken ("last Fri")
    resolved: str  # what they name ("the Friday before 15 July 2023")
    # The same as an interval; None when it falls outside the years 1-9999.
    span: TimeRange | None = None


def resolve_relative_times(text: str, said_at: datetime) -> tuple[ResolvedTime, ...]:
    """The relative time expressions of `text`, in the order spoken, each with what it
    names when said at `said_at` (a local time: its calendar day is the speaker's)."""
    found: list[tuple[int, ResolvedTime]] = []
    taken: list[tuple[int, int]] = []
    # Substring tests for the words every expression needs (most sentences have none) cost
    # a fraction of one regex pass; a word inside another ("agony") only costs a search.
    lowered = text.lower()
    present = {word for word in _TRIGGER_WORDS if word in lowered}
    for kind, pattern in _PATTERNS:
        if present.isdisjoint(_TRIGGERS[kind]):
            continue
        for match in pattern.finditer(text):
            span = match.span()
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue
            resolved = _resolve(kind, match, said_at)
            if resolved is None:
                continue
            taken.append(span)
            named = _span(kind, match, said_at)
            found.append((span[0], ResolvedTime(match.group(0), resolved, named)))
    unique = dict.fromkeys(r for _, r in sorted(found, key=lambda item: item[0]))
    return tuple(unique)


def relative_range(text: str, now: datetime) -> TimeRange | None:
    """The range the first relative time of `text` names, read at `now`; None when there is
    none, or when it falls outside the calendar."""
    found = resolve_relative_times(text, now)
    return found[0].span if found else None


def annotation(text: str, said_at: datetime) -> str:
    """`(yesterday: 7 May 2023; next month: June 2023)`, or "" when nothing is relative."""
    times = resolve_relative_times(text, said_at)
    if not times:
        return ""
    return "(" + "; ".join(f"{t.phrase}: {t.resolved}" for t in times) + ")"


def _count(match: re.Match[str]) -> int:
    raw = match["n"].lower()
    return int(raw) if raw.isdigit() else _COUNT_WORDS[" ".join(raw.split())]


def _month_of(year: int, month: int) -> str:
    return f"{MONTH_NAMES[month - 1]} {year}"


def _shift_month(at: datetime, months: int) -> tuple[int, int]:
    index = at.year * 12 + at.month - 1 + months
    return index // 12, index % 12 + 1


def _resolve(kind: str, match: re.Match[str], at: datetime) -> str | None:
    day = spelled_day(at)
    if kind == "day_before":
        return spelled_day(at - timedelta(days=1))
    if kind == "day_after":
        return spelled_day(at + timedelta(days=1))
    if kind == "days_ago":
        return spelled_day(at - timedelta(days=_count(match)))
    if kind == "weeks_ago":
        n, unit = _count(match), match["unit"].lower().rstrip("s")
        return f"the {unit} before {day}" if n == 1 else f"{n} {unit}s before {day}"
    if kind == "months_ago":
        return _month_of(*_shift_month(at, -_count(match)))
    if kind == "years_ago":
        return str(at.year - _count(match))
    if kind == "last_weekday":
        weekday = next(d for d in _WEEKDAYS if d.lower().startswith(match["weekday"].lower()))
        return f"the {weekday} before {day}"
    if kind in ("last_span", "this_span", "next_span"):
        unit = match["unit"].lower()
        relation = {"last_span": "before", "this_span": "of", "next_span": "after"}[kind]
        return f"the {unit} {relation} {day}"
    which = match["which"].lower()
    step = {"last": -1, "this": 0, "next": 1}[which]
    if kind == "month":
        return _month_of(*_shift_month(at, step))
    if kind == "year":
        return str(at.year + step)
    return _season(match["season"].lower(), step, at)


def _season(season: str, step: int, at: datetime) -> str:
    """`summer 2022`: "last summer" is the latest one already over, "next" the first not yet
    begun (northern hemisphere). A winter spans two years, so it is anchored instead."""
    if season == "winter":
        relation = {-1: "before", 0: "of", 1: "after"}[step]
        return f"the winter {relation} {spelled_day(at)}"
    season = "autumn" if season == "fall" else season
    return f"{season} {_season_year(_SEASON_STARTS[season], step, at)}"


_SEASON_STARTS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9}


def _season_year(first: int, step: int, at: datetime) -> int:
    """The year of the season starting in month `first` that "last", "this" or "next" names."""
    if step < 0 and at.month < first + 3:
        return at.year - 1
    if step > 0 and at.month >= first:
        return at.year + 1
    return at.year


def _span(kind: str, match: re.Match[str], at: datetime) -> TimeRange | None:
    """What `_resolve` says, as the interval of whole days it names."""
    try:
        return _days_named(kind, match, at)
    except (OverflowError, ValueError):
        return None  # a range past the years 1-9999: no date can be in it


def _days_named(kind: str, match: re.Match[str], at: datetime) -> TimeRange:
    phrase = match.group(0)
    today = datetime(at.year, at.month, at.day, tzinfo=UTC)

    def days(first: datetime, count: int = 1) -> TimeRange:
        return day_range(first.year, first.month, first.day, phrase, count)

    if kind in ("day_before", "day_after", "days_ago"):
        back = {"day_before": 1, "day_after": -1}.get(kind) or _count(match)
        return days(today - timedelta(days=back))
    if kind == "weeks_ago":
        n = _count(match)
        if match["unit"].lower().startswith("weekend"):
            return days(_weekend_before(today) - timedelta(weeks=n - 1), 2)
        return days(today - timedelta(weeks=n), 7)
    if kind == "months_ago":
        return month_range(*_shift_month(at, -_count(match)), phrase)
    if kind == "years_ago":
        return year_range(at.year - _count(match), phrase)
    if kind == "last_weekday":
        weekday = next(
            i for i, d in enumerate(_WEEKDAYS) if d.lower().startswith(match["weekday"].lower())
        )
        return days(today - timedelta(days=(today.weekday() - weekday) % 7 or 7))
    if kind in ("last_span", "this_span", "next_span"):
        weekend = match["unit"].lower() == "weekend"
        monday = today - timedelta(days=today.weekday())
        if kind == "last_span":
            return (
                days(_weekend_before(today), 2) if weekend else days(today - timedelta(weeks=1), 7)
            )
        if kind == "this_span":
            return days(monday + timedelta(days=5), 2) if weekend else days(monday, 7)
        if weekend:
            return days(today + timedelta(days=(5 - today.weekday()) % 7 or 7), 2)
        return days(today + timedelta(days=1), 7)
    step = {"last": -1, "this": 0, "next": 1}[match["which"].lower()]
    if kind == "month":
        return month_range(*_shift_month(at, step), phrase)
    if kind == "year":
        return year_range(at.year + step, phrase)
    return _season_range(match["season"].lower(), step, today, phrase)


def _weekend_before(today: datetime) -> datetime:
    """The Saturday of the latest weekend begun before `today`."""
    return today - timedelta(days=(today.weekday() - 5) % 7 or 7)


def _season_range(season: str, step: int, today: datetime, phrase: str) -> TimeRange:
    """The months `_season` names; a winter is the December to February its words anchor."""
    if season == "winter":
        in_winter = today.month in (12, 1, 2)
        # The winter ending in March of `year`: the one holding today, or else the coming one.
        year = today.year if today.month < 3 else today.year + 1
        if in_winter or step < 0:
            year += step
        return TimeRange(
            datetime(year - 1, 12, 1, tzinfo=UTC), datetime(year, 3, 1, tzinfo=UTC), phrase
        )
    first = _SEASON_STARTS[season]
    year = _season_year(first, step, today)
    return TimeRange(
        datetime(year, first, 1, tzinfo=UTC), datetime(year, first + 3, 1, tzinfo=UTC), phrase
    )
