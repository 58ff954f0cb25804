"""Calendar windows (day, ISO week, month) in a user's time zone, the tree's parent rules,
the one table of English month names, and the ranges time expressions name.

A window is half-open, [start, end), and both bounds are aware datetimes in the user's zone.
A window starts at the first instant whose local clock reads its first day at 00:00 or
later, so a DST day lasts 23 or 25 hours and a skipped date yields an empty window.

Python compares and subtracts two datetimes that share a tzinfo by their wall clocks and
ignores DST folds, so compare or measure windows after `to_utc`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memstream.domain.models import Level, Window

DEFAULT_TZ = "UTC"
CALENDAR_LEVELS = (Level.DAY, Level.WEEK, Level.MONTH)

Interval = tuple[datetime, datetime]

# A node of this level belongs to the calendar window of that level containing its start.
_PARENT_LEVEL = {Level.SESSION: Level.DAY, Level.DAY: Level.WEEK, Level.WEEK: Level.MONTH}


def get_zone(tz: str | None) -> ZoneInfo:
    """The zone named `tz` (None means UTC); ValueError if the name is not a known IANA zone."""
    name = DEFAULT_TZ if tz is None else tz
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r}") from exc


def to_utc(instant: datetime) -> datetime:
    """`instant` converted to UTC; ValueError if it is naive."""
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise ValueError(f"naive datetime {instant.isoformat()}: an offset or zone is required")
    return instant.astimezone(UTC)


def window_for(level: Level, instant: datetime, tz: str | None = None) -> Interval:
    """The window of a calendar level that contains `instant`: the local calendar day, the
    ISO week (Monday 00:00 to the next Monday 00:00, local) or the local calendar month."""
    if level not in CALENDAR_LEVELS:
        raise ValueError(f"{Level(level).label} has no calendar window")
    zone, at = get_zone(tz), to_utc(instant)
    first = _first_day(level, at.astimezone(zone).date())
    start, end = _day_start(first, zone), _day_start(_next_first_day(level, first), zone)
    # Where a clock was once set back across midnight (Arizona 1944), yesterday's date shows
    # again after today began; the interval, not the wall date, decides membership.
    while at < start:
        first = _first_day(level, first - timedelta(days=1))
        start, end = _day_start(first, zone), start
    while at >= end:
        first = _next_first_day(level, first)
        start, end = end, _day_start(_next_first_day(level, first), zone)
    return start.astimezone(zone), end.astimezone(zone)


def on_window_clock(instant: datetime, window: Window) -> datetime:
    """`instant` on the clock of the zone `window` opened in, which names its dates across a
    DST change (a window recorded without a zone: on its start's own offset)."""
    if window.tz:
        return to_utc(instant).astimezone(get_zone(window.tz))
    zone = window.start.tzinfo
    return instant.astimezone(zone) if zone else instant


def monday_of(local: datetime) -> date:
    """The Monday of the ISO week `local` (a local clock reading) falls in: a week's name."""
    return local.date() - timedelta(days=local.weekday())


def parent_window(level: Level, child_start: datetime, tz: str | None = None) -> Interval:
    """The calendar window of the parent of a `level` node that starts at `child_start`.

    A session belongs to the day it starts on, a day to its ISO week, and a week to the month
    of its Monday, even when it runs into the next month. `child_start` may be any instant
    of the child's own window, not only its first.
    """
    parent = _PARENT_LEVEL.get(level)
    if parent is None:
        raise ValueError(f"{Level(level).label} has no calendar parent")
    if level == Level.WEEK:
        child_start = window_for(Level.WEEK, child_start, tz)[0]
    return window_for(parent, child_start, tz)


def parent_window_start(level: Level, child_start: datetime, tz: str | None = None) -> datetime:
    """Start of the parent window of a `level` node that starts at `child_start`."""
    return parent_window(level, child_start, tz)[0]


def _first_day(level: Level, day: date) -> date:
    if level == Level.WEEK:
        return day - timedelta(days=day.weekday())
    if level == Level.MONTH:
        return day.replace(day=1)
    return day


def _next_first_day(level: Level, first: date) -> date:
    if level == Level.WEEK:
        return first + timedelta(days=7)
    if level == Level.MONTH:
        return (first.replace(day=28) + timedelta(days=4)).replace(day=1)
    return first + timedelta(days=1)


def _day_start(day: date, zone: ZoneInfo) -> datetime:
    """First instant (in UTC) at which the local clock reads `day` 00:00 or later."""
    midnight = datetime.combine(day, time())
    # fold=0 picks the earlier of two midnights after a clock set back, and maps a skipped
    # midnight to the jump itself when the jump starts at 00:00 (Chile, Samoa 2011).
    start = midnight.replace(tzinfo=zone).astimezone(UTC)
    if _wall(start - timedelta(seconds=1), zone) < midnight:
        return start
    # A jump that began before midnight and ended after it (Toronto 1919): the day begins at
    # the jump. Bisect on whole seconds, the granularity of tz database transitions.
    lo = int(midnight.replace(tzinfo=zone, fold=1).timestamp())
    hi = int(start.timestamp())
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _wall(datetime.fromtimestamp(mid, UTC), zone) >= midnight:
            hi = mid
        else:
            lo = mid
    return datetime.fromtimestamp(hi, UTC)


def _wall(instant: datetime, zone: ZoneInfo) -> datetime:
    return instant.astimezone(zone).replace(tzinfo=None)


# The one month table. English names, matched and written by hand rather than with
# strptime/strftime, whose %B depends on the process locale.
MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
# Lower-case names and their common abbreviations ("sep" and "sept"), to month numbers.
MONTH_NUMBERS = {
    spelling: number
    for number, name in enumerate(MONTH_NAMES, start=1)
    for spelling in (name.lower(), name[:3].lower())
} | {"sept": 9}


def spelled_day(instant: date, *, year: bool = True) -> str:
    """The date as people write it: "8 May 2023", or "8 May" without the year."""
    text = f"{instant.day} {MONTH_NAMES[instant.month - 1]}"
    return f"{text} {instant.year}" if year else text


@dataclass(frozen=True, slots=True)
class TimeRange:
    """The interval a time expression names: half-open, [start, end), in UTC."""

    start: datetime
    end: datetime  # exclusive
    phrase: str  # the words that named it

    def contains(self, instant: datetime) -> bool:
        return self.start <= instant < self.end


def day_range(year: int, month: int, day: int, phrase: str, days: int = 1) -> TimeRange:
    """`days` days from the given one."""
    start = datetime(year, month, day, tzinfo=UTC)
    return TimeRange(start, start + timedelta(days=days), phrase)


def month_range(year: int, month: int, phrase: str) -> TimeRange:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return TimeRange(start, end, phrase)


def year_range(year: int, phrase: str) -> TimeRange:
    return TimeRange(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC), phrase)
