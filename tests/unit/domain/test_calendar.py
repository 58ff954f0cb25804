"""Calendar windows: a partition of time per level, correct across DST, year ends and zones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.domain.calendar import (
    CALENDAR_LEVELS,
    MONTH_NAMES,
    MONTH_NUMBERS,
    parent_window,
    parent_window_start,
    spelled_day,
    to_utc,
    window_for,
)
from memstream.domain.models import Level

# Zones picked for their oddities: DST at 02:00 or at midnight, half- and quarter-hour
# offsets, 30-minute DST, the +14 h edge, and whole skipped dates (Apia 2011, Kiritimati 1994).
ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Asia/Kolkata",
    "Pacific/Kiritimati",
    "Pacific/Apia",
    "America/Santiago",
    "America/Havana",
    "Asia/Beirut",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "Pacific/Chatham",
    "America/St_Johns",
    "Africa/Casablanca",
]
# Subtract from UTC values only: arithmetic on a zoned datetime moves its wall clock.
MICRO = timedelta(microseconds=1)

zones = st.sampled_from(ZONES)
levels = st.sampled_from(CALENDAR_LEVELS)
instants = st.datetimes(
    min_value=datetime(1990, 1, 1), max_value=datetime(2090, 12, 31), timezones=st.just(UTC)
)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def local(
    tz: str, year: int, month: int, day: int, hour: int = 0, minute: int = 0, *, fold: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=ZoneInfo(tz), fold=fold)


def length(window: tuple[datetime, datetime]) -> timedelta:
    return to_utc(window[1]) - to_utc(window[0])


# --- properties -------------------------------------------------------------------------


@settings(max_examples=200)
@given(levels, instants, zones)
def test_each_instant_lies_in_exactly_one_window(level: Level, instant: datetime, tz: str) -> None:
    start, end = window_for(level, instant, tz)
    assert to_utc(start) <= instant < to_utc(end)
    # Neighbours abut: the end opens the next window and the instant before start closes
    # the previous one, so windows never overlap and leave no gap.
    assert to_utc(window_for(level, end, tz)[0]) == to_utc(end)
    assert to_utc(window_for(level, to_utc(start) - MICRO, tz)[1]) == to_utc(start)
    assert [to_utc(b) for b in window_for(level, start, tz)] == [to_utc(start), to_utc(end)]


@settings(max_examples=200)
@given(levels, instants, zones)
def test_bounds_are_local_calendar_boundaries(level: Level, instant: datetime, tz: str) -> None:
    start, end = window_for(level, instant, tz)
    assert start.tzinfo is ZoneInfo(tz)
    assert end.tzinfo is ZoneInfo(tz)
    # The local date changes exactly at start: just before it the clock showed an earlier day.
    assert (to_utc(start) - MICRO).astimezone(ZoneInfo(tz)).date() < start.date()
    if level == Level.WEEK:
        assert start.date().weekday() == 0
    if level == Level.MONTH:
        assert start.day == 1


@settings(max_examples=200)
@given(instants, zones)
def test_a_day_lasts_23_to_25_hours(instant: datetime, tz: str) -> None:
    assert timedelta(hours=23) <= length(window_for(Level.DAY, instant, tz)) <= timedelta(hours=25)


@settings(max_examples=200)
@given(instants, zones)
def test_days_nest_in_weeks_and_months(instant: datetime, tz: str) -> None:
    day_start, day_end = window_for(Level.DAY, instant, tz)
    week_start, week_end = window_for(Level.WEEK, instant, tz)
    month_start, month_end = window_for(Level.MONTH, day_start, tz)
    assert to_utc(week_start) <= to_utc(day_start) and to_utc(day_end) <= to_utc(week_end)
    assert to_utc(month_start) <= to_utc(day_start) and to_utc(day_end) <= to_utc(month_end)


@settings(max_examples=200)
@given(instants, zones)
def test_parents_follow_the_tree_rules(instant: datetime, tz: str) -> None:
    day = window_for(Level.DAY, instant, tz)
    week = window_for(Level.WEEK, instant, tz)
    assert parent_window(Level.SESSION, instant, tz) == day
    assert parent_window(Level.DAY, day[0], tz) == week
    # A week belongs to the month of its Monday, whichever instant of the week is passed.
    assert parent_window(Level.WEEK, instant, tz) == window_for(Level.MONTH, week[0], tz)
    assert parent_window_start(Level.WEEK, week[0], tz) == window_for(Level.MONTH, week[0], tz)[0]


@settings(max_examples=200)
@given(levels, instants, zones)
def test_the_zone_of_the_instant_does_not_matter(level: Level, instant: datetime, tz: str) -> None:
    as_local = instant.astimezone(ZoneInfo(tz))
    as_other = instant.astimezone(ZoneInfo("Asia/Kolkata"))
    expected = [to_utc(b) for b in window_for(level, instant, tz)]
    assert [to_utc(b) for b in window_for(level, as_local, tz)] == expected
    assert [to_utc(b) for b in window_for(level, as_other, tz)] == expected


# --- DST ---------------------------------------------------------------------------------


def test_berlin_spring_forward_day_lasts_23_hours() -> None:
    window = window_for(Level.DAY, utc(2024, 3, 31, 12), "Europe/Berlin")
    assert window == (local("Europe/Berlin", 2024, 3, 31), local("Europe/Berlin", 2024, 4, 1))
    assert [b.utcoffset() for b in window] == [timedelta(hours=1), timedelta(hours=2)]
    assert length(window) == timedelta(hours=23)


def test_berlin_fall_back_day_lasts_25_hours() -> None:
    window = window_for(Level.DAY, utc(2024, 10, 27, 12), "Europe/Berlin")
    assert to_utc(window[0]) == utc(2024, 10, 26, 22)
    assert to_utc(window[1]) == utc(2024, 10, 27, 23)
    assert length(window) == timedelta(hours=25)


def test_both_readings_of_a_repeated_hour_belong_to_the_same_day() -> None:
    first = local("Europe/Berlin", 2024, 10, 27, 2, 30, fold=0)
    second = local("Europe/Berlin", 2024, 10, 27, 2, 30, fold=1)
    assert to_utc(second) - to_utc(first) == timedelta(hours=1)
    assert window_for(Level.DAY, first, "Europe/Berlin") == window_for(
        Level.DAY, second, "Europe/Berlin"
    )


def test_new_york_dst_days() -> None:
    spring = window_for(Level.DAY, utc(2024, 3, 10, 12), "America/New_York")
    autumn = window_for(Level.DAY, utc(2024, 11, 3, 12), "America/New_York")
    assert length(spring) == timedelta(hours=23)
    assert length(autumn) == timedelta(hours=25)
    assert to_utc(autumn[0]) == utc(2024, 11, 3, 4)
    assert to_utc(autumn[1]) == utc(2024, 11, 4, 5)


def test_new_york_evening_is_already_the_next_day_in_utc() -> None:
    # 23:30 on New Year's Eve in New York is 04:30 UTC on January 1st.
    instant = local("America/New_York", 2024, 12, 31, 23, 30)
    assert window_for(Level.DAY, instant, "America/New_York")[0] == local(
        "America/New_York", 2024, 12, 31
    )
    assert window_for(Level.DAY, instant, "UTC")[0] == utc(2025, 1, 1)
    assert window_for(Level.MONTH, instant, "America/New_York")[0].month == 12


def test_santiago_skips_midnight_so_the_day_starts_at_one() -> None:
    # Chile springs forward at 00:00, straight to 01:00: the day begins at the jump.
    start, end = window_for(Level.DAY, utc(2024, 9, 8, 12), "America/Santiago")
    assert (start.hour, start.utcoffset()) == (1, timedelta(hours=-3))
    assert to_utc(start) == utc(2024, 9, 8, 4)
    assert length((start, end)) == timedelta(hours=23)


def test_toronto_1919_jump_across_midnight_starts_the_day_at_the_jump() -> None:
    # Clocks went from 23:30 straight to 00:30: the first instant of March 31 is that jump.
    start, _ = window_for(Level.DAY, utc(1919, 3, 31, 12), "America/Toronto")
    assert to_utc(start) == utc(1919, 3, 31, 4, 30)
    assert (start.hour, start.minute) == (0, 30)
    assert to_utc(window_for(Level.DAY, utc(1919, 3, 31, 4, 29), "America/Toronto")[1]) == to_utc(
        start
    )


def test_arizona_1944_clock_set_back_across_midnight_still_partitions_time() -> None:
    # At 00:01 on 1 January 1944 clocks went back to 23:01: December 31 showed again.
    repeated = utc(1944, 1, 1, 6, 30)
    assert repeated.astimezone(ZoneInfo("America/Phoenix")).day == 31
    start, end = window_for(Level.DAY, repeated, "America/Phoenix")
    assert to_utc(start) <= repeated < to_utc(end)
    assert to_utc(window_for(Level.DAY, to_utc(start) - MICRO, "America/Phoenix")[1]) == to_utc(
        start
    )


# --- offsets far from UTC ---------------------------------------------------------------


def test_kolkata_half_hour_offset() -> None:
    instant = utc(2024, 6, 30, 20)  # 01:30 on July 1st in Kolkata
    assert window_for(Level.DAY, instant, "Asia/Kolkata") == (
        local("Asia/Kolkata", 2024, 7, 1),
        local("Asia/Kolkata", 2024, 7, 2),
    )
    assert to_utc(window_for(Level.DAY, instant, "Asia/Kolkata")[0]) == utc(2024, 6, 30, 18, 30)
    assert window_for(Level.MONTH, instant, "Asia/Kolkata")[0] == local("Asia/Kolkata", 2024, 7, 1)


def test_kiritimati_is_fourteen_hours_ahead() -> None:
    assert window_for(Level.DAY, utc(2024, 1, 1, 9, 59), "Pacific/Kiritimati")[0].day == 1
    assert window_for(Level.DAY, utc(2024, 1, 1, 10), "Pacific/Kiritimati")[0].day == 2
    # 10:00 UTC on New Year's Eve is already January in Kiritimati.
    january = window_for(Level.MONTH, utc(2023, 12, 31, 10), "Pacific/Kiritimati")
    assert january == (
        local("Pacific/Kiritimati", 2024, 1, 1),
        local("Pacific/Kiritimati", 2024, 2, 1),
    )


@pytest.mark.parametrize(
    ("tz", "jump", "before", "after"),
    [
        # Kiritimati skipped 31 December 1994 and Samoa 30 December 2011.
        ("Pacific/Kiritimati", utc(1994, 12, 31, 10), 30, 1),
        ("Pacific/Apia", utc(2011, 12, 30, 10), 29, 31),
    ],
)
def test_a_skipped_date_leaves_no_gap(tz: str, jump: datetime, before: int, after: int) -> None:
    earlier = window_for(Level.DAY, jump - MICRO, tz)
    later = window_for(Level.DAY, jump, tz)
    assert (earlier[0].day, later[0].day) == (before, after)
    assert to_utc(earlier[1]) == to_utc(later[0]) == jump
    assert length(earlier) == length(later) == timedelta(hours=24)


# --- ISO weeks and months ---------------------------------------------------------------


def test_year_end_falls_in_iso_week_one_of_the_next_year() -> None:
    start, end = window_for(Level.WEEK, utc(2024, 12, 31, 12), "UTC")
    assert (start, end) == (utc(2024, 12, 30), utc(2025, 1, 6))
    assert start.isocalendar()[:2] == (2025, 1)
    assert window_for(Level.MONTH, utc(2024, 12, 31, 12), "UTC") == (
        utc(2024, 12, 1),
        utc(2025, 1, 1),
    )


def test_week_straddling_january_and_february_belongs_to_january() -> None:
    week_start = local("Europe/Berlin", 2024, 1, 29)  # Monday
    assert (
        window_for(Level.WEEK, local("Europe/Berlin", 2024, 2, 4, 23), "Europe/Berlin")[0]
        == week_start
    )
    assert parent_window_start(Level.WEEK, week_start, "Europe/Berlin") == local(
        "Europe/Berlin", 2024, 1, 1
    )
    assert parent_window(Level.WEEK, local("Europe/Berlin", 2024, 2, 2), "Europe/Berlin") == (
        local("Europe/Berlin", 2024, 1, 1),
        local("Europe/Berlin", 2024, 2, 1),
    )


def test_a_week_always_starts_on_monday_local_time() -> None:
    start, end = window_for(
        Level.WEEK, utc(2024, 3, 31, 20), "Europe/Berlin"
    )  # Sunday evening, DST day
    assert start == local("Europe/Berlin", 2024, 3, 25)
    assert end == local("Europe/Berlin", 2024, 4, 1)
    assert length((start, end)) == timedelta(days=7) - timedelta(hours=1)


def test_session_past_midnight_belongs_to_the_day_it_started() -> None:
    session_start = local("Europe/Berlin", 2024, 5, 10, 23, 30)
    assert parent_window_start(Level.SESSION, session_start, "Europe/Berlin") == local(
        "Europe/Berlin", 2024, 5, 10
    )


def test_day_belongs_to_its_iso_week() -> None:
    sunday = local("Europe/Berlin", 2024, 2, 4)
    assert parent_window_start(Level.DAY, sunday, "Europe/Berlin") == local(
        "Europe/Berlin", 2024, 1, 29
    )


# --- defaults and errors ----------------------------------------------------------------


def test_no_zone_means_utc() -> None:
    assert window_for(Level.DAY, utc(2024, 5, 10, 23)) == (utc(2024, 5, 10), utc(2024, 5, 11))


def test_naive_datetime_is_rejected() -> None:
    with pytest.raises(ValueError, match="naive"):
        window_for(Level.DAY, datetime(2024, 5, 10), "UTC")


@pytest.mark.parametrize("tz", ["Mars/Olympus_Mons", "", "../etc/passwd", "Europe/"])
def test_unknown_zone_is_rejected(tz: str) -> None:
    with pytest.raises(ValueError, match="unknown time zone"):
        window_for(Level.DAY, utc(2024, 5, 10), tz)


@pytest.mark.parametrize("level", [Level.SEGMENT, Level.SESSION])
def test_non_calendar_levels_have_no_window(level: Level) -> None:
    with pytest.raises(ValueError, match="no calendar window"):
        window_for(level, utc(2024, 5, 10), "UTC")


@pytest.mark.parametrize("level", [Level.SEGMENT, Level.MONTH])
def test_segments_and_months_have_no_calendar_parent(level: Level) -> None:
    with pytest.raises(ValueError, match="no calendar parent"):
        parent_window(level, utc(2024, 5, 10), "UTC")


def test_one_month_table_reads_and_writes_english_months() -> None:
    assert [MONTH_NUMBERS[name.lower()] for name in MONTH_NAMES] == list(range(1, 13))
    assert MONTH_NUMBERS["jan"] == 1 and MONTH_NUMBERS["sep"] == MONTH_NUMBERS["sept"] == 9
    assert len(MONTH_NUMBERS) == 24  # 12 names, 11 distinct abbreviations (May has none), sept


def test_days_are_spelled_day_month_year() -> None:
    instant = datetime(2023, 5, 8, 23, 30, tzinfo=UTC)
    assert spelled_day(instant) == "8 May 2023"
    assert spelled_day(instant, year=False) == "8 May"
    assert spelled_day(instant.astimezone(ZoneInfo("Asia/Tokyo"))) == "9 May 2023"
