"""A user who changes time zone: the reducer's calendar windows, property by property.

Random conversations travel between zones with odd offsets and clock changes (the date
line, half-hour and 45-minute zones, a half-hour DST), with turns that carry no zone among
them. Whatever the path, each level's windows are disjoint and named by increasing dates,
every turn reaches a month through its session, day and week, one node id means one
window, and a replay (with the state stored and read back after every event, or not) names
the same nodes.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.domain.test_clock_changes import RECEIVED, RULES
from tests.unit.domain.test_clock_changes import ZONES as CLOCK_CHANGE_ZONES

from memstream.contracts.codec import decode_state, encode_state
from memstream.domain.calendar import to_utc
from memstream.domain.calendar_windows import window_date
from memstream.domain.models import ClockTicked, Level, Turn, Window, WindowClosed
from memstream.domain.windows import (
    Output,
    SegmentReady,
    apply,
    initial_state,
)

# The clock-change zones, and two with neither a change nor an odd offset.
ZONES = (*CLOCK_CHANGE_ZONES, "Asia/Tokyo", "Pacific/Pago_Pago")
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
    assert as_instants(stored) == as_instants(kept)
    assert as_instants(replay(turns, stored=True)) == as_instants(stored)


def as_instants(value: object) -> object:
    """`value` with every time as its instant and offset. A stored state reads a local time
    back with a fixed offset where the live one holds the zone: the same instant and wall
    clock, but Python's `==` across two zones is False whenever one of them falls in a
    repeated hour (01:30 in Lisbon on the night the clocks go back), whatever the instants."""
    if isinstance(value, datetime):
        return (to_utc(value), value.utcoffset())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (
            type(value).__name__,
            *(as_instants(getattr(value, f.name)) for f in dataclasses.fields(value)),
        )
    if isinstance(value, list | tuple):
        return tuple(as_instants(item) for item in value)
    if isinstance(value, dict):
        return {key: as_instants(item) for key, item in value.items()}
    return value


def lisbon_then_tokyo() -> list[Turn]:
    """Three sessions in Lisbon in the week of 9 March 2026, then three in Tokyo."""
    lisbon = [datetime(2026, 3, d, 18, tzinfo=UTC) for d in (9, 10, 11)]
    tokyo = [datetime(2026, 3, d, h, tzinfo=UTC) for d, h in ((11, 23), (12, 3), (13, 3))]
    return [
        Turn(f"e{n}", "u1", f"s{n}", 0, "Ana", "other", "hello", ts, tz)
        for n, (ts, tz) in enumerate(
            [(ts, "Europe/Lisbon") for ts in lisbon] + [(ts, "Asia/Tokyo") for ts in tokyo]
        )
    ]


def test_a_move_to_tokyo_mid_week_keeps_one_week_and_one_month() -> None:
    levels = by_level(final_windows(replay(lisbon_then_tokyo(), stored=True)))
    assert len(levels[Level.WEEK]) == 1 and len(levels[Level.MONTH]) == 1
    days = levels[Level.DAY]
    # 23:00 UTC on the 11th is 08:00 on the 12th in Tokyo, but Lisbon's 11th still runs.
    assert [window_date(c.window).day for c in days] == [9, 10, 11, 12, 13]
    assert [c.window.tz for c in days] == ["Europe/Lisbon"] * 3 + ["Asia/Tokyo"] * 2
    # Tokyo's 12th starts where Lisbon's 11th ended, not at midnight in Tokyo.
    assert to_utc(days[3].window.start) == to_utc(days[2].window.end)


def test_a_late_turn_of_a_lisbon_session_reopens_the_lisbon_windows() -> None:
    turns = lisbon_then_tokyo()
    state = initial_state("u1", "Europe/Lisbon")
    for turn in turns:
        state, _ = apply(state, turn, RECEIVED, RULES)
    late = Turn("late", "u1", "s1", 1, "Mira", "other", "late", turns[1].ts, "Asia/Tokyo")
    _, out = apply(state, late, RECEIVED, RULES)
    again = [o for o in out if isinstance(o, WindowClosed)]
    assert [o.window.level for o in again] == [Level.SESSION, Level.DAY]
    assert {o.window.tz for o in again} == {"Europe/Lisbon"}
    assert window_date(again[1].window).day == 10


def test_a_state_stored_before_windows_kept_their_zone_decodes() -> None:
    turns = lisbon_then_tokyo()
    state = initial_state("u1", "Europe/Lisbon")
    for turn in turns[:2]:
        state, _ = apply(state, turn, RECEIVED, RULES)
    old = encode_state(state)
    del old["calendar"]
    for window in old["open_windows"].values():
        del window["tz"]
    old["sessions"] = [row[:7] for row in old["sessions"]]
    decoded = decode_state(old)
    assert {w.start for w in decoded.calendar} == {
        ow.window.start for ow in state.open_windows.values() if ow.window.level > Level.SESSION
    }
    assert all(w.tz == "Europe/Lisbon" for w in decoded.calendar)
    assert all(s.tz is None for s in decoded.sessions.values())
    # It goes on as the state it was: the same windows as without the round trip.
    for turn in turns[2:]:
        decoded, out_old = apply(decoded, turn, RECEIVED, RULES)
        state, out_new = apply(state, turn, RECEIVED, RULES)
        assert [o.node_id for o in out_old if isinstance(o, WindowClosed)] == [
            o.node_id for o in out_new if isinstance(o, WindowClosed)
        ]


def test_a_session_starting_in_the_repeated_hour_replays_the_same() -> None:
    # 00:30 UTC on 25 October 2026 is 01:30 in Lisbon, an hour that occurs twice that night.
    night = [
        Leg("Europe/Lisbon", timedelta(minutes=2130), (timedelta(minutes=10),)),
        Leg("Europe/Lisbon", timedelta(minutes=20), ()),
    ]
    turns = turns_of(datetime(2026, 10, 23, 12, tzinfo=UTC), "Europe/Lisbon", night)
    assert as_instants(replay(turns, stored=True)) == as_instants(replay(turns, stored=False))
