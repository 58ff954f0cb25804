"""Time expressions in a query, resolved to the interval they name (after TSM's ParseTime).

"What did Nate make on 9 November, 2022?" names a day; "in May 2022" a month; "in 2023" a
year; "between August 11 and August 15 2023" a span; "yesterday", "last week", "three
months ago" are resolved against the query time. Pure functions, standard library only;
the result is a half-open UTC interval [start, end), or None when the query names no time
(or a time outside the years 1-9999, for any query time).

Deliberately small: explicit dates in the common English orders, months, years, seasons,
and the usual relative phrases. A missing year is the latest one that puts the date at or
before the query time (questions are about the past).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memstream.domain.calendar import MONTH_NUMBERS

_MONTH = r"(?P<{0}>" + "|".join(sorted(MONTH_NUMBERS, key=len, reverse=True)) + r")\.?"
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
_IN_YEAR = re.compile(rf"\b(?:in|during|of|since)\s+{_YEAR.format('y')}\b", re.IGNORECASE)
_SEASON = re.compile(
    rf"\b(?P<which>last\s+|this\s+)?(?P<s>spring|summer|autumn|fall|winter)(?:\s+(?:of\s+)?{_YEAR.format('y')})?\b",
    re.IGNORECASE,
)
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_AGO = re.compile(
    r"\b(?P<n>\d+|a|an|one|two|three|four|five|six)\s+(?P<unit>day|week|month|year)s?\s+ago\b",
    re.IGNORECASE,
)
_LAST = re.compile(r"\b(?P<which>last|this)\s+(?P<unit>week|weekend|month|year)\b", re.IGNORECASE)
_YESTERDAY = re.compile(r"\byesterday\b", re.IGNORECASE)
# Seasons as northern-hemisphere month spans; winter starts in December of the year before.
_SEASON_MONTHS = {"spring": (3, 6), "summer": (6, 9), "autumn": (9, 12), "fall": (9, 12)}


@dataclass(frozen=True, slots=True)
class TimeRange:
    start: datetime
    end: datetime  # exclusive
    phrase: str  # the words that named it

    def contains(self, instant: datetime) -> bool:
        return self.start <= instant < self.end


def resolve_time_range(query: str, now: datetime) -> TimeRange | None:
    """The interval the first (most specific) time expression of `query` names."""
    now = now if now.tzinfo else now.replace(tzinfo=UTC)
    for resolver in (_explicit_day, _month_year, _season, _year, _month, _relative):
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
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None  # "31 June": not a date, so no constraint
    return TimeRange(start, start + timedelta(days=1), phrase)


def _month_range(year: int, month: int, phrase: str) -> TimeRange:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return TimeRange(start, end, phrase)


def _year_range(year: int, phrase: str) -> TimeRange:
    return TimeRange(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC), phrase)


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
    return _month_range(int(match["y"]), MONTH_NUMBERS[match["m"].lower()], match.group(0))


def _month(query: str, now: datetime) -> TimeRange | None:
    match = _IN_MONTH.search(query)
    if match is None:
        return None
    month = MONTH_NUMBERS[match["m"].lower()]
    year = now.year if month <= now.month else now.year - 1
    return _month_range(year, month, match.group(0))


def _year(query: str, now: datetime) -> TimeRange | None:
    match = _IN_YEAR.search(query)
    if match is None:
        return None
    return _year_range(int(match["y"]), match.group(0))


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


def _relative(query: str, now: datetime) -> TimeRange | None:
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if match := _YESTERDAY.search(query):
        return TimeRange(today - timedelta(days=1), today, match.group(0))
    if match := _AGO.search(query):
        n = int(match["n"]) if match["n"].isdigit() else _NUMBERS[match["n"].lower()]
        unit = match["unit"].lower()
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[unit] * n
        centre = today - timedelta(days=days)
        # "two months ago" is approximate: half a unit either side.
        half = timedelta(days=max(1, {"day": 1, "week": 7, "month": 30, "year": 365}[unit] // 2))
        return TimeRange(centre - half, centre + half + timedelta(days=1), match.group(0))
    if match := _LAST.search(query):
        unit, which = match["unit"].lower(), match["which"].lower()
        if unit in ("week", "weekend"):
            monday = today - timedelta(days=today.weekday())
            start = monday - timedelta(days=7) if which == "last" else monday
            if unit == "weekend":
                start += timedelta(days=5)
                return TimeRange(start, start + timedelta(days=2), match.group(0))
            return TimeRange(start, start + timedelta(days=7), match.group(0))
        if unit == "month":
            first = today.replace(day=1)
            if which == "this":
                return _month_range(first.year, first.month, match.group(0))
            prev = first - timedelta(days=1)
            return _month_range(prev.year, prev.month, match.group(0))
        return _year_range(today.year - (which == "last"), match.group(0))
    return None
