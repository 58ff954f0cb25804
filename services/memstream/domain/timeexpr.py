"""Time expressions in a query, resolved to the interval they name (after TSM's ParseTime).

"What did Nate make on 9 November, 2022?" names a day; "in May 2022" a month; "in 2023" a
year; "between August 11 and August 15 2023" a span; "yesterday", "last week", "eight
months ago" are resolved against the query time, by the code that dates them in a summary
(`domain/event_time.py`), so a query finds the range a summary wrote. Pure functions,
standard library only; the result is a half-open UTC interval [start, end), or None when
the query names no time (or a time outside the years 1-9999, for any query time).

Deliberately small: explicit dates in the common English orders, months, years, seasons,
and the relative phrases a summary dates. A missing year is the latest one that puts the date at or
before the query time (questions are about the past), but for a month asked in the future
tense ("Where will she live in March?"): the next such month to come.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from memstream.domain.alternation import longest_first
from memstream.domain.calendar import (
    MONTH_NUMBERS,
    TimeRange,
    day_range,
    month_range,
    year_range,
)
from memstream.domain.event_time import relative_range

__all__ = ["TimeRange", "resolve_time_range"]

_MONTH = r"(?P<{0}>" + longest_first(MONTH_NUMBERS) + r")\.?"
_DAY = r"(?P<{0}>\d{{1,2}})(?:st|nd|rd|th)?"
_YEAR = r"(?P<{0}>(?:19|20)\d\d)"
# "9 November, 2022" / "9th of November 2022" and "November 9, 2022" / "November 9th".
_DAY_MONTH = re.compile(
    rf"\b{_DAY.format('d')}\s+(?:of\s+)?{_MONTH.format('m')},?(?:\s*{_YEAR.format('y')})?\b",
    re.IGNORECASE,
)
_MONTH_DAY = re.compile(
    rf"\b{_MONTH.format('m')}\s+{_DAY.format('d')}\b(?:,?\s*{_YEAR.format('y')})?",
    re.IGNORECASE,
)
_MONTH_YEAR = re.compile(rf"\b{_MONTH.format('m')},?\s+{_YEAR.format('y')}\b", re.IGNORECASE)
_IN_MONTH = re.compile(rf"\b(?:in|during|of)\s+{_MONTH.format('m')}\b(?!\s+\d)", re.IGNORECASE)
# A question in the future tense asks of a month to come.
_FUTURE = re.compile(r"\b(?:will|'ll|going to)\b", re.IGNORECASE)
_IN_YEAR = re.compile(rf"\b(?:in|during|of|since)\s+{_YEAR.format('y')}\b", re.IGNORECASE)
_SEASON = re.compile(
    rf"\b(?P<which>last\s+|this\s+)?(?P<s>spring|summer|autumn|fall|winter)(?:\s+(?:of\s+)?{_YEAR.format('y')})?\b",
    re.IGNORECASE,
)
# Seasons as northern-hemisphere month spans; winter starts in December of the year before.
_SEASON_MONTHS = {"spring": (3, 6), "summer": (6, 9), "autumn": (9, 12), "fall": (9, 12)}


def resolve_time_range(query: str, now: datetime) -> TimeRange | None:
    """The interval the first (most specific) time expression of `query` names."""
    now = now if now.tzinfo else now.replace(tzinfo=UTC)
    for resolver in (_explicit_day, _month_year, relative_range, _season, _year, _month):
        try:
            found = resolver(query, now)
        except (OverflowError, ValueError):
            # The phrase names a time outside years 1-9999 ("last year" in year 1,
            # "yesterday" on 1 January of year 1): no date can be in it, so no constraint.
            return None
        if found is not None:
            return found
    return None


def _day_range(year: int, month: int, day: int, phrase: str) -> TimeRange | None:
    try:
        return day_range(year, month, day, phrase)
    except ValueError:
        return None  # "31 June": not a date, so no constraint


def _latest_year(month: int, day: int, now: datetime) -> int:
    """The year that puts month/day at or before `now`."""
    return now.year if (month, day) <= (now.month, now.day) else now.year - 1


def _explicit_day(query: str, now: datetime) -> TimeRange | None:
    for pattern in (_DAY_MONTH, _MONTH_DAY):
        match = pattern.search(query)
        if match is None:
            continue
        month, day = MONTH_NUMBERS[match["m"].lower()], int(match["d"])
        year = int(match["y"]) if match["y"] else _latest_year(month, day, now)
        return _day_range(year, month, day, match.group(0))
    return None


def _month_year(query: str, now: datetime) -> TimeRange | None:
    match = _MONTH_YEAR.search(query)
    if match is None:
        return None
    return month_range(int(match["y"]), MONTH_NUMBERS[match["m"].lower()], match.group(0))


def _month(query: str, now: datetime) -> TimeRange | None:
    match = _IN_MONTH.search(query)
    if match is None:
        return None
    month = MONTH_NUMBERS[match["m"].lower()]
    if _FUTURE.search(query):
        year = now.year if month > now.month else now.year + 1
    else:
        year = now.year if month <= now.month else now.year - 1
    return month_range(year, month, match.group(0))


def _year(query: str, now: datetime) -> TimeRange | None:
    match = _IN_YEAR.search(query)
    if match is None:
        return None
    return year_range(int(match["y"]), match.group(0))


def _season(query: str, now: datetime) -> TimeRange | None:
    match = _SEASON.search(query)
    if match is None:
        return None
    season = match["s"].lower()
    if match["y"]:
        year = int(match["y"])
    else:
        # "last summer": the latest one that has ended; "summer"/"this summer": the latest begun.
        year = now.year
        first = 12 if season == "winter" else _SEASON_MONTHS[season][0]
        ended_by = 3 if season == "winter" else _SEASON_MONTHS[season][1]
        if match["which"] and match["which"].strip().lower() == "last":
            if season == "winter" or now.month < ended_by:
                year -= 1
        elif season != "winter" and now.month < first:
            year -= 1
    if season == "winter":
        start = datetime(year - 1, 12, 1, tzinfo=UTC)
        return TimeRange(start, datetime(year, 3, 1, tzinfo=UTC), match.group(0))
    first, last = _SEASON_MONTHS[season]
    return TimeRange(
        datetime(year, first, 1, tzinfo=UTC), datetime(year, last, 1, tzinfo=UTC), match.group(0)
    )
