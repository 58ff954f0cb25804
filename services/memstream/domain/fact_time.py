"""When a stated fact began to hold, from the words of the clause and the time it was said.

`event_time` names what a relative expression refers to, for a summary to print; a fact
needs an instant to order versions by. "We moved here three years ago" said on 8 May 2023
began on 8 May 2020; "I've been vegetarian for two years" too; "since last May" on 1 May
2022 (the latest May already begun); "last year" on 1 January of it. An expression that
names a span begins the span, the earliest moment the words allow.

A change told as scheduled ("I'm joining Wipro next month", "we move to Leeds in March")
begins when its time phrase says, ahead of when it was said (`starts_at`). Pure, standard
library.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from memstream.domain.calendar import MONTH_NAMES
from memstream.domain.event_time import resolve_relative_times

_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "a few": 3, "several": 3,
}  # fmt: skip
_COUNT = (
    r"(?P<n>\d{1,2}|a couple of|a few|several|an?|one|two|three|four|five|six|seven"
    r"|eight|nine|ten|eleven|twelve)"
)
_UNIT = r"(?P<unit>day|week|month|year)s?"
_MONTH = r"(?P<month>" + "|".join(MONTH_NAMES) + r")"

# Durations count back from the message ("for three years", "three years ago"); a named
# month or year is where the state began ("since May", "since 2019", "in 2019").
_DURATION = re.compile(
    rf"\b(?:for(?: the (?:last|past))?|over the (?:last|past))\s+{_COUNT}\s+{_UNIT}\b", re.I
)
# A durative noun phrase opening a sentence ("Three weeks of bouldering", "Six months into
# Japanese", "Five months fully plant-based") and a negated perfect ("I haven't eaten meat in
# about four years") say how long a state has held, counted back from when it was said.
_HEDGE = r"(?:(?:about|around|almost|nearly|over)\s+)?"
_DURATIVE = re.compile(
    rf"^{_HEDGE}{_COUNT}\s+{_UNIT}\s+(?:of|into|fully|completely|strictly|totally)\b", re.I
)
# The negation must be the clause's own verb: in "I moved to Berlin and haven't seen Mum in
# two years" the move is not two years old.
_NOT_SINCE = re.compile(
    rf"^(?:\S+\s+){{0,3}}?(?:haven't|hasn't|have not|has not)\b[^.;!?,]*?\bin\s+{_HEDGE}"
    rf"{_COUNT}\s+{_UNIT}\b",
    re.I,
)
_AGO = re.compile(rf"\b{_COUNT}\s+{_UNIT}\s+ago\b", re.I)
_SINCE_MONTH = re.compile(rf"\b(?:since\s+(?:last\s+)?|last\s+){_MONTH}\b", re.I)
_YEAR = re.compile(r"\b(?:since|in)\s+(?P<year>(?:19|20)\d\d)\b", re.I)
# "I went vegan in January": that month of the year it was said, if begun by then. Not a
# month still ahead ("she's moving there in July", said in June, is this July, not last
# July), nor in a clause about what is to come ("I start there in May"): the fact then
# holds from when said.
_IN_MONTH = re.compile(rf"\bin\s+(?:early\s+|late\s+|mid-?)?{_MONTH}\b(?!\s+\d)", re.I)
_AHEAD = re.compile(
    r"\b(?:will|'ll|going to|gonna|plan|planning|next|start|starts|starting)\b", re.I
)
_LAST = re.compile(r"\b(?P<which>last|this)\s+(?P<unit>month|year)\b", re.I)
_SEASON = re.compile(r"\blast\s+(?P<season>spring|summer|autumn|fall)\b", re.I)
_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9}  # northern hemisphere
_YESTERDAY = re.compile(r"\byesterday\b", re.I)
# A time ahead of when it was said: a month ("in March", "from March", "next March"), a
# weekday ("on Monday", "starting Monday"), a count ahead ("in two weeks"), and the spans
# `event_time` names ahead ("tomorrow", "next week", "next month", "next spring").
_AHEAD_MONTH = re.compile(
    rf"\b(?:(?:in|from|by|starting|as of|this|next)\s+(?:(?:early|late|mid)[\s-]+)?"
    rf"|(?:early|late|mid)[\s-]+|(?:beginning|start|middle|end) of\s+){_MONTH}\b(?!\s+\d)",
    re.I,
)
# Which part of a span a phrase names ahead of it: "at the end of next month", "late
# March", "mid-January". The start is the earliest moment those words allow: the span's
# middle for its middle, its last quarter for its end.
_PART = re.compile(
    r"(?:\b(?P<part>early|late|mid)[\s-]*|\b(?P<of>beginning|start|middle|end)\s+of"
    r"(?:\s+the)?\s*)$",
    re.I,
)
_SHARE_OF_SPAN = {
    "early": 0.0, "beginning": 0.0, "start": 0.0, "mid": 0.5, "middle": 0.5,
    "late": 0.75, "end": 0.75,
}  # fmt: skip
# "the month", "the year" said with a part ("at the end of the month"): this one.
_THIS_SPAN = re.compile(r"\b(?:the|this)\s+(?P<unit>month|year)\b", re.I)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_AHEAD_WEEKDAY = re.compile(
    r"\b(?:on|this|next|from|starting|as of)\s+(?P<weekday>" + "|".join(_WEEKDAYS) + r")\b", re.I
)
_IN_COUNT = re.compile(rf"\bin\s+{_COUNT}\s+{_UNIT}\b", re.I)


def began_at(clause: str, said_at: datetime) -> datetime:
    """When the state `clause` describes began; `said_at` when nothing in it says."""
    resolvers = (
        _from_duration,
        _from_month,
        _from_year,
        _from_last,
        _from_season,
        _from_yesterday,
        _from_named_span,
    )
    for resolve in resolvers:
        found = resolve(clause, said_at)
        if found is not None and found <= said_at:
            return found
    return said_at


def starts_at(clause: str, said_at: datetime) -> datetime | None:
    """The day a change told as scheduled begins, from the first time phrase of `clause`
    naming a time after the day it was said ("next month" said on 12 January: 1 February);
    None when it names none. A month said as "in March" is the next March to come: this
    year's when said before it, next year's when said after; said in March itself, it
    names no time ahead. A part of the span ("late March", "at the end of next month")
    begins where that part does; "next week" on the next Monday."""
    ahead: list[tuple[int, datetime]] = []
    for match in _AHEAD_MONTH.finditer(clause):
        month = _month_number(match)
        if month != said_at.month:
            year = said_at.year if month > said_at.month else said_at.year + 1
            first = _day(said_at, year, month, 1)
            following = _day(said_at, year + month // 12, month % 12 + 1, 1)
            part = _part(clause[: match.start("month")])
            ahead.append((match.start(), _within(first, following, part)))
    for match in _THIS_SPAN.finditer(clause):
        part = _part(clause[: match.start()])
        # "At the start of the month" said in it may mean the next one's: nothing ahead read.
        if _SHARE_OF_SPAN.get(part, 0.0) > 0:
            first, following = _this_span(said_at, match["unit"].lower())
            # Said inside the part already ("the end of the year" in late November): it
            # begins the next day, if the span has one left.
            begins = max(_within(first, following, part), _midnight(said_at + timedelta(days=1)))
            if begins < following:
                ahead.append((match.start(), begins))
    for match in _AHEAD_WEEKDAY.finditer(clause):
        wanted = _WEEKDAYS.index(match["weekday"].lower())
        days = (wanted - said_at.weekday()) % 7 or 7
        ahead.append((match.start(), _midnight(said_at + timedelta(days=days))))
    for match in _IN_COUNT.finditer(clause):
        later = _back(said_at, -_count(match["n"]), match["unit"])
        ahead.append((match.start(), _midnight(later)))
    lowered = clause.lower()
    for resolved in resolve_relative_times(clause, said_at):
        span = resolved.span
        if span is not None and span.start.date() > said_at.date():
            at = max(lowered.find(resolved.phrase.lower()), 0)
            first, following = _midnight(span.start), _midnight(span.end)
            if resolved.phrase.lower() == "next week":  # the calendar's: it begins on Monday
                first = _midnight(said_at + timedelta(days=7 - said_at.weekday()))
                following = first + timedelta(days=7)
            ahead.append((at, _within(first, following, _part(clause[:at]))))
    return min(ahead, key=lambda found: found[0])[1] if ahead else None


def _part(before: str) -> str:
    """The part of a span the words just before its phrase name ("end", "mid"), or ""."""
    found = _PART.search(before.rstrip())
    return (found["part"] or found["of"]).lower() if found else ""


def _within(first: datetime, following: datetime, part: str) -> datetime:
    """The day a part of the span [first, following) begins; its first day for no part."""
    offset = (following - first) * _SHARE_OF_SPAN.get(part, 0.0)
    return _midnight(first + timedelta(days=offset.days))


def _this_span(said_at: datetime, unit: str) -> tuple[datetime, datetime]:
    if unit == "year":
        return _day(said_at, said_at.year, 1, 1), _day(said_at, said_at.year + 1, 1, 1)
    month, year = said_at.month, said_at.year
    return _day(said_at, year, month, 1), _day(said_at, year + month // 12, month % 12 + 1, 1)


def _day(said_at: datetime, year: int, month: int, day: int) -> datetime:
    """The first moment of a day, in the speaker's own calendar."""
    return datetime(year, month, day, tzinfo=said_at.tzinfo)


def _midnight(instant: datetime) -> datetime:
    return _day(instant, instant.year, instant.month, instant.day)


def _count(raw: str) -> int:
    raw = " ".join(raw.lower().split())
    return int(raw) if raw.isdigit() else _NUMBER_WORDS[raw]


def _back(said_at: datetime, n: int, unit: str) -> datetime:
    unit = unit.lower()
    if unit == "day":
        return said_at - timedelta(days=n)
    if unit == "week":
        return said_at - timedelta(weeks=n)
    months = n * 12 if unit == "year" else n
    index = said_at.year * 12 + said_at.month - 1 - months
    year, month = index // 12, index % 12 + 1
    # 31 March less one month is the last day of February, not an error.
    for day in range(said_at.day, 0, -1):
        try:
            return said_at.replace(year=year, month=month, day=day)
        except ValueError:
            continue
    raise AssertionError("unreachable: day 1 exists in every month")


def _from_duration(clause: str, said_at: datetime) -> datetime | None:
    match = (
        _DURATION.search(clause)
        or _AGO.search(clause)
        or _DURATIVE.search(clause)
        or _NOT_SINCE.search(clause)
    )
    return _back(said_at, _count(match["n"]), match["unit"]) if match else None


def _from_month(clause: str, said_at: datetime) -> datetime | None:
    match = _SINCE_MONTH.search(clause)
    if not match:
        return _in_month(clause, said_at)
    month = _month_number(match)
    # The latest such month already begun; "since last May" said in May means a year ago.
    year = said_at.year if month < said_at.month else said_at.year - 1
    if month == said_at.month and "last" not in match.group(0).lower():
        year = said_at.year
    return said_at.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)


def _in_month(clause: str, said_at: datetime) -> datetime | None:
    """The first of the month an "in January" names, of the year said, once begun."""
    named = None if _AHEAD.search(clause) else _IN_MONTH.search(clause)
    if named is None or _month_number(named) > said_at.month:
        return None
    month = _month_number(named)
    return said_at.replace(month=month, day=1, hour=0, minute=0, second=0, microsecond=0)


def _month_number(match: re.Match[str]) -> int:
    return next(
        i for i, name in enumerate(MONTH_NAMES, 1) if name.lower() == match["month"].lower()
    )


def _from_year(clause: str, said_at: datetime) -> datetime | None:
    match = _YEAR.search(clause)
    if not match:
        return None
    return said_at.replace(
        year=int(match["year"]), month=1, day=1, hour=0, minute=0, second=0, microsecond=0
    )


def _from_last(clause: str, said_at: datetime) -> datetime | None:
    match = _LAST.search(clause)
    if not match:
        return None
    step = -1 if match["which"].lower() == "last" else 0
    start = said_at.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if match["unit"].lower() == "year":
        return start.replace(year=said_at.year + step, month=1)
    return _back(start, -step, "month")


def _from_season(clause: str, said_at: datetime) -> datetime | None:
    # "Last summer" is the latest one already over, as event_time reads it; winter spans
    # two years and is left to the message time.
    match = _SEASON.search(clause)
    if not match:
        return None
    first = _SEASON_START[match["season"].lower()]
    year = said_at.year if said_at.month >= first + 3 else said_at.year - 1
    return said_at.replace(year=year, month=first, day=1, hour=0, minute=0, second=0, microsecond=0)


def _from_yesterday(clause: str, said_at: datetime) -> datetime | None:
    return said_at - timedelta(days=1) if _YESTERDAY.search(clause) else None


def _from_named_span(clause: str, said_at: datetime) -> datetime | None:
    """The first day of the first past span the clause names as summaries resolve it
    (`event_time`: "last week", "last weekend", "last Friday", "this week"), in the
    speaker's own calendar: "We moved to Montreal last week" did not begin when said."""
    for resolved in resolve_relative_times(clause, said_at):
        span = resolved.span
        if span is not None and span.start.date() <= said_at.date():
            start = span.start
            return datetime(start.year, start.month, start.day, tzinfo=said_at.tzinfo)
    return None
