"""The day, week and month windows of a user who changes time zone.

A window is computed in the zone the user is in when it opens (the zone of the turn that
opens its first session), and its bounds stay fixed in that zone: a later turn in another
zone does not move them. The reducer (`domain.windows`) remembers the windows it opened,
with their zones, and asks here for the window of each level that a new session (or a day,
or a week) belongs to:

- the remembered window of that level whose bounds contain the instant, if there is one;
- otherwise the calendar window of the instant in the current zone, cut so that it starts
  no earlier than the end of the remembered window before it and ends no later than the
  start of the one after it: two windows of one level never claim the same instant;
- except where the current zone's calendar still shows the date (week, month) of the window
  before, or an earlier one (a flight west, across the date line): then that window grows
  to the end of the current zone's date, and no second window of the same date appears.

So each level is a sequence of disjoint windows whose dates, each read in its own zone,
only increase. Windows are remembered within a bound per level; past it the oldest are
forgotten, and a late turn that far back gets the calendar window of the current zone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import date, datetime, timedelta

from memstream.domain.calendar import get_zone, to_utc, window_for
from memstream.domain.models import Level, Window

# How many windows of each level are remembered: about two months of days, a quarter of
# weeks, half a year of months.
MAX_REMEMBERED_WINDOWS = {Level.DAY: 62, Level.WEEK: 13, Level.MONTH: 6}


def calendar_date(level: Level, instant: datetime, tz: str | None) -> date:
    """The date that names the window of `level` holding `instant` on the clock of `tz`: the
    day itself, the Monday of its ISO week, or the first of its month."""
    day = to_utc(instant).astimezone(get_zone(tz)).date()
    if level == Level.WEEK:
        return day - timedelta(days=day.weekday())
    if level == Level.MONTH:
        return day.replace(day=1)
    return day


def window_date(window: Window) -> date:
    """The date that names `window`, read in the zone it opened in."""
    return calendar_date(window.level, window.start, window.tz)


def calendar_window(
    user_id: str, level: Level, instant: datetime, tz: str, known: Iterable[Window]
) -> Window:
    """The window of `level` that `instant` belongs to, given the remembered windows."""
    # POSIX seconds: two times of one ZoneInfo compare by their wall clocks, not instants.
    at = instant.timestamp()
    before: Window | None = None
    after: Window | None = None
    before_end = after_start = 0.0  # (their bounds, read once: a user has up to 62 days)
    for window in known:
        if window.level != level:
            continue
        start = window.start.timestamp()
        if start > at:
            if after is None or start < after_start:
                after, after_start = window, start
            continue
        end = window.end.timestamp()
        if at < end:
            return window
        if before is None or end > before_end:
            before, before_end = window, end
    zone = get_zone(tz)
    natural_start, natural_end = (to_utc(bound) for bound in window_for(level, instant, tz))
    if after is not None:
        natural_end = min(natural_end, to_utc(after.start))
    if before is not None and calendar_date(level, instant, tz) <= window_date(before):
        return replace(before, end=natural_end.astimezone(get_zone(before.tz)))
    if before is not None:
        natural_start = max(natural_start, to_utc(before.end))
    return Window(
        user_id, level, natural_start.astimezone(zone), natural_end.astimezone(zone), tz=tz
    )


def remembered(known: tuple[Window, ...], window: Window) -> tuple[Window, ...]:
    """`known` with `window` in place of the one of its level and start (a window that grew)
    or added, and the oldest of its level forgotten past the bound."""
    level, start = window.level, window.start.timestamp()
    kept = [w for w in known if w.level != level or w.start.timestamp() != start]
    kept.append(window)
    same = [w for w in kept if w.level == level]
    excess = len(same) - MAX_REMEMBERED_WINDOWS[level]
    if excess <= 0:
        return tuple(kept)
    forgotten = {id(w) for w in sorted(same, key=lambda w: w.start.timestamp())[:excess]}
    return tuple(w for w in kept if id(w) not in forgotten)
