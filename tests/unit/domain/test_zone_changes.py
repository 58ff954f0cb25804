"""A user who changes time zone: the reducer's calendar windows, property by property.

Random conversations travel between zones with odd offsets and clock changes (the date
line, half-hour and 45-minute zones, a half-hour DST), with turns that carry no zone among
them. Whatever the path, each level's windows are disjoint and named by increasing dates,
every turn reaches a month through its session, day and week, one node id means one
window, and a replay (with the state stored and read back after every event, or not) names
the same nodes.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstream.contracts.codec import decode_state, encode_state
from memstream.domain.calendar import to_utc
from memstream.domain.calendar_windows import window_date
from memstream.domain.models import ClockTicked, Level, Turn, Window, WindowClosed
from memstream.domain.windows import (
    Output,
    SegmentReady,
    WindowRules,
    apply,
    initial_state,
)

ZONES = (
    "Pacific/Kiritimati",
    "Pacific/Apia",
    "America/St_Johns",
    "Asia/Kathmandu",
    "Australia/Lord_Howe",
    "Europe/Lisbon",
    "America/New_York",
    "Asia/Tokyo",
    "Pacific/Pago_Pago",
)
# Days around clock changes: Europe and North America in spring and autumn 2026, Lord
# Howe's half-hour changes, Samoa skipping 30 December 2011.
STARTS = (
    datetime(2026, 3, 27, 12, tzinfo=UTC),
    datetime(2026, 10, 23, 12, tzinfo=UTC),
    datetime(2026, 3, 6, 12, tzinfo=UTC),
    datetime(2026, 10, 30, 12, tzinfo=UTC),
    datetime(2026, 4, 3, 12, tzinfo=UTC),
    datetime(2026, 9, 30, 12, tzinfo=UTC),
    datetime(2011, 12, 27, 12, tzinfo=UTC),
)
RULES = WindowRules(segment_messages=2, session_idle=timedelta(minutes=30))
RECEIVED = datetime(2030, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Leg:
    """One session: where the user is (None: the turn names no zone), how long after the
    previous session it starts, and the gaps between its turns."""

    tz: str | None
    after: timedelta
    gaps: tuple[timedelta, ...]


legs = st.builds(
    Leg,
    st.sampled_from((*ZONES, None)),
    st.integers(min_value=1, max_value=3 * 24 * 60).map(lambda m: timedelta(minutes=m)),
    st.lists(
        st.integers(min_value=1, max_value=25).map(lambda m: timedelta(minutes=m)),
        min_size=0,
        max_size=4,
    ).map(tuple),
)
journeys = st.tuples(
    st.sampled_from(STARTS), st.sampled_from(ZONES), st.lists(legs, min_size=1, max_size=14)
)


def turns_of(start: datetime, first_tz: str, journey: list[Leg]) -> list[Turn]:
    turns: list[Turn] = []
    at = start
    for n, leg in enumerate(journey):
        at += leg.after
        tz = first_tz if n == 0 else leg.tz
        for seq, gap in enumerate((timedelta(0), *leg.gaps)):
            at += gap
            turns.append(
                Turn(
                    event_id=f"s{n}-{seq}",
                    user_id="u1",
                    session_id=f"s{n}",
                    seq=seq,
                    speaker="Ana" if seq % 2 == 0 else "Mira",
                    role="user" if seq % 2 == 0 else "assistant",
                    text=f"message {seq}",
                    ts=at,
                    tz=tz,
                )
            )
    return turns


def replay(turns: list[Turn], *, stored: bool) -> list[Output]:
    """Every output of the turns, then of a clock far past them that closes what is open."""
    state = initial_state("u1", turns[0].tz or "UTC")
    outputs: list[Output] = []
    end = ClockTicked("u1", RECEIVED + timedelta(days=1))  # past every window and idle session
    for event in (*turns, end):
        state, out = apply(state, event, RECEIVED, RULES)
        if stored:
            state = decode_state(encode_state(state))
        outputs += out
    return outputs


def final_windows(outputs: list[Output]) -> dict[str, WindowClosed]:
    """The last closure of each node: the window it was consolidated with."""
    return {o.node_id: o for o in outputs if isinstance(o, WindowClosed)}


def by_level(closed: dict[str, WindowClosed]) -> dict[Level, list[WindowClosed]]:
    levels: dict[Level, list[WindowClosed]] = defaultdict(list)
    for closure in closed.values():
        levels[closure.window.level].append(closure)
    for found in levels.values():
        found.sort(key=lambda c: to_utc(c.window.start))
    return levels


def inside(instant: datetime, window: Window) -> bool:
    return to_utc(window.start) <= to_utc(instant) < to_utc(window.end)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(journeys)
def test_a_travelling_user_gets_one_window_per_date_and_level(journey) -> None:
    start, first_tz, legs_ = journey
    turns = turns_of(start, first_tz, legs_)
    outputs = replay(turns, stored=True)
    closed = final_windows(outputs)
    levels = by_level(closed)

    for level in (Level.DAY, Level.WEEK, Level.MONTH):
        windows = [c.window for c in levels[level]]
        assert windows, f"no {level.noun} window"
        for earlier, later in itertools.pairwise(windows):
            assert to_utc(earlier.end) <= to_utc(later.start), "two windows claim one instant"
            assert window_date(earlier) < window_date(later), "two windows of one date"
        for window in windows:
            assert window.tz is not None
            assert to_utc(window.start) < to_utc(window.end)
        starts = [c.window.start for c in outputs_of(outputs, level)]
        # One node id names one window: every closure of a node has the same start.
        for closure in outputs_of(outputs, level):
            assert to_utc(closure.window.start) == to_utc(closed[closure.node_id].window.start)
        assert starts

    # Every turn is in exactly one L1, whose session reaches a month through its ancestors,
    # each containing its child's start.
    segments = [o for o in outputs if isinstance(o, SegmentReady)]
    said = [m.event_id for s in segments for m in s.messages]
    assert sorted(said) == sorted(t.event_id for t in turns)
    for segment in segments:
        child = closed[segment.parent_id]
        while child.parent_id is not None:
            parent = closed[child.parent_id]
            assert parent.window.level == child.window.level + 1
            assert inside(child.window.start, parent.window)
            child = parent
        assert child.window.level == Level.MONTH

    # Each session is dated on the calendar of the zone it began in.
    for session in levels[Level.SESSION]:
        first = next(t for t in turns if t.session_id == session.window.session_id)
        assert session.window.tz == (first.tz or session.window.tz)


def outputs_of(outputs: list[Output], level: Level) -> list[WindowClosed]:
    return [o for o in outputs if isinstance(o, WindowClosed) and o.window.level == level]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(journeys)
def test_a_replay_names_the_same_nodes(journey) -> None:
    start, first_tz, legs_ = journey
    turns = turns_of(start, first_tz, legs_)
    stored = replay(turns, stored=True)
    kept = replay(turns, stored=False)
    assert stored == kept
    assert replay(turns, stored=True) == stored
