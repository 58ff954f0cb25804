"""Days across clock changes, and the dates a user's memories carry on their local calendar:
titles, the date of an L1, what "yesterday" resolves to."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.contracts.codec import decode_window, encode_window
from memstream.domain.calendar import to_utc, window_for
from memstream.domain.models import Level, MemoryNode, Turn, Window, WindowClosed
from memstream.domain.nodes import window_node
from memstream.domain.segment_text import render_segment
from memstream.domain.summary_text import consolidate_summary
from memstream.domain.windows import SegmentReady, WindowRules, apply, initial_state

ZONES = (
    "Pacific/Kiritimati",
    "Pacific/Apia",
    "America/St_Johns",
    "Asia/Kathmandu",
    "Australia/Lord_Howe",
    "Europe/Lisbon",
    "America/New_York",
)
HOUR = timedelta(hours=1)


@pytest.mark.parametrize(
    ("tz", "local_noon", "length"),
    [
        ("Europe/Lisbon", datetime(2026, 3, 29, 12), 23 * HOUR),  # spring forward
        ("Europe/Lisbon", datetime(2026, 10, 25, 12), 25 * HOUR),  # fall back
        ("America/New_York", datetime(2026, 3, 8, 12), 23 * HOUR),
        ("America/New_York", datetime(2026, 11, 1, 12), 25 * HOUR),
        ("America/St_Johns", datetime(2026, 3, 8, 12), 23 * HOUR),
        ("Australia/Lord_Howe", datetime(2026, 4, 5, 12), 24.5 * HOUR),  # half an hour back
        ("Australia/Lord_Howe", datetime(2026, 10, 4, 12), 23.5 * HOUR),
        ("Asia/Kathmandu", datetime(2026, 3, 29, 12), 24 * HOUR),
        # Samoa skipped 30 December 2011: the 29th ends where the 31st begins.
        ("Pacific/Apia", datetime(2011, 12, 29, 12), 24 * HOUR),
        ("Pacific/Apia", datetime(2011, 12, 31, 12), 24 * HOUR),
    ],
)
def test_a_day_lasts_as_long_as_its_clock_says(tz: str, local_noon: datetime, length) -> None:
    start, end = window_for(Level.DAY, local_noon.replace(tzinfo=ZoneInfo(tz)), tz)
    assert to_utc(end) - to_utc(start) == length
    assert start.date() == local_noon.date() and (start.hour, start.minute) == (0, 0)


def test_samoa_has_no_30_december_2011() -> None:
    tz = "Pacific/Apia"
    _, end_29 = window_for(Level.DAY, datetime(2011, 12, 29, 12, tzinfo=ZoneInfo(tz)), tz)
    start_31, _ = window_for(Level.DAY, end_29, tz)
    assert start_31 == end_29 and start_31.date().day == 31


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(ZONES),
    st.datetimes(min_value=datetime(1995, 1, 1), max_value=datetime(2035, 12, 31)),
)
def test_days_weeks_and_months_tile_local_time(tz: str, naive: datetime) -> None:
    instant = naive.replace(tzinfo=UTC)
    local_date = instant.astimezone(ZoneInfo(tz)).date()
    for level in (Level.DAY, Level.WEEK, Level.MONTH):
        start, end = window_for(level, instant, tz)
        assert to_utc(start) <= instant < to_utc(end)
        assert window_for(level, end, tz)[0] == end  # the next one starts where it ends
        assert to_utc(window_for(level, to_utc(start) - timedelta(seconds=1), tz)[1]) == to_utc(
            start
        )
    day_start, day_end = window_for(Level.DAY, instant, tz)
    assert day_start.date() == local_date
    assert 23 * HOUR <= to_utc(day_end) - to_utc(day_start) <= 25 * HOUR


RULES = WindowRules(segment_messages=2, session_idle=timedelta(minutes=30))
RECEIVED = datetime(2030, 1, 1, tzinfo=UTC)


def said(n: int, ts: datetime, tz: str | None, text: str = "hello") -> Turn:
    return Turn(f"e{n}", "u1", f"s{n}", 0, "Ana", "other", text, ts, tz)


def leaf(turn: Turn, parent_id: str) -> MemoryNode:
    return MemoryNode(
        id=f"l-{turn.event_id}",
        user_id="u1",
        level=Level.SEGMENT,
        t_start=turn.ts,
        t_end=turn.ts,
        text=render_segment((turn,)),
        parent_id=parent_id,
        source_ids=(turn.event_id,),
        speakers=(turn.speaker,),
    )


def test_the_night_the_clocks_go_back_is_titled_by_its_local_date() -> None:
    # 00:40 in Lisbon on 25 October 2026, still summer time: 23:40 UTC the day before. The
    # producer sends UTC; the session, its day and its L1 are all of 25 October.
    first = said(1, datetime(2026, 10, 24, 23, 40, tzinfo=UTC), "Europe/Lisbon")
    # 23:30 on the 25th, winter time, after a 25-hour day: still the 25th.
    last = said(
        2, datetime(2026, 10, 25, 23, 30, tzinfo=UTC), "Europe/Lisbon", "I ran a race yesterday."
    )
    state = initial_state("u1", "Europe/Lisbon")
    outputs: list[object] = []
    for turn in (first, last):
        state, out = apply(state, turn, RECEIVED, RULES)
        outputs += out
    state, out = apply(state, said(3, datetime(2026, 10, 27, 9, tzinfo=UTC), None), RECEIVED, RULES)
    outputs += out
    # As the consolidator reads them: through the windows topic.
    closures = [decode_window(encode_window(o)) for o in outputs if isinstance(o, WindowClosed)]
    sessions = [c for c in closures if c.window.level == Level.SESSION][:2]
    day = next(c for c in closures if c.window.level == Level.DAY)
    assert to_utc(day.window.end) - to_utc(day.window.start) == 25 * HOUR
    segments = [o for o in outputs if isinstance(o, SegmentReady)][:2]
    for segment in segments:
        assert render_segment(segment.messages).startswith("25 October 2026, Ana:")
    session_nodes = []
    for closure, segment in zip(sessions, segments, strict=True):
        summary = consolidate_summary(
            Level.SESSION, closure.window, [leaf(segment.messages[0], segment.parent_id)], []
        )
        assert summary.text.startswith("Session on 25 October 2026 (Sun):")
        session_nodes.append(window_node(closure, [], summary, 1))
    # The day's window carries its zone: 23:30 that night is read as the 25th (on the
    # day's first offset, summer time, it would be 00:30 on the 26th).
    day_text = consolidate_summary(Level.DAY, day.window, session_nodes, []).text
    assert day_text.startswith("Day of 25 October 2026 (Sun):")
    assert "(yesterday: 24 October 2026)" in day_text


def test_a_turn_without_a_zone_is_dated_in_the_zone_the_user_was_last_in() -> None:
    state = initial_state("u1", "UTC")
    state, _ = apply(
        state, said(1, datetime(2026, 3, 29, 10, tzinfo=UTC), "Asia/Tokyo"), RECEIVED, RULES
    )
    # 00:30 on 30 March in Tokyo; 29 March in UTC, the offset the producer sent.
    state, out = apply(
        state, said(2, datetime(2026, 3, 29, 15, 30, tzinfo=UTC), None), RECEIVED, RULES
    )
    segment = next(o for o in out if isinstance(o, SegmentReady))
    assert render_segment(segment.messages).startswith("30 March 2026, Ana:")
    assert state.tz == "Asia/Tokyo"


def test_a_window_recorded_without_a_zone_reads_its_start_offset() -> None:
    start = datetime(2026, 10, 25, 0, 0, tzinfo=ZoneInfo("Europe/Lisbon"))
    window = Window("u1", Level.DAY, start, start + 25 * HOUR)
    text = consolidate_summary(Level.DAY, window, [], []).text
    assert text.startswith("Day of 25 October 2026 (Sun):")
