"""Node ids: fixed forever for given inputs, distinct for distinct inputs."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.domain.ids import NAMESPACE, segment_id, window_node_id
from memstream.domain.models import Level

SESSION_START = datetime(2024, 3, 31, 8, tzinfo=UTC)
BERLIN_DAY = datetime(2024, 3, 31, tzinfo=ZoneInfo("Europe/Berlin"))

# Computed once when the scheme was introduced; a change here renames stored nodes.
EXPECTED = [
    (segment_id("alice", ["e1", "e2"]), "f2dbb3f3-44ba-5bc8-898d-1b5fb3d1c613"),
    (segment_id("alice", ["e2", "e1"]), "57aa4531-d6b8-514c-9ba0-cfb873cdfc38"),
    (
        window_node_id("alice", Level.SESSION, SESSION_START, "s1"),
        "4a8b40e6-d2c7-5442-babf-5d6d4d4de959",
    ),
    (window_node_id("alice", Level.DAY, BERLIN_DAY), "836c6a07-7f8a-5887-b0a3-305f57c96cb9"),
    (
        window_node_id("alice", Level.MONTH, datetime(2024, 1, 1, tzinfo=UTC)),
        "ca55720a-1df6-5717-b802-f953a908ccdb",
    ),
]

texts = st.text(max_size=12)
event_lists = st.lists(texts, min_size=1, max_size=4)
window_levels = st.sampled_from([Level.DAY, Level.WEEK, Level.MONTH])
starts = st.datetimes(
    min_value=datetime(1990, 1, 1), max_value=datetime(2090, 12, 31), timezones=st.just(UTC)
)


@pytest.mark.parametrize(("actual", "expected"), EXPECTED)
def test_ids_match_the_values_computed_once(actual: str, expected: str) -> None:
    assert actual == expected


def test_ids_are_the_same_in_another_process() -> None:
    # A fresh interpreter with another hash seed must derive the very same ids.
    code = (
        "from datetime import datetime, UTC\n"
        "from memstream.domain.ids import segment_id, window_node_id\n"
        "from memstream.domain.models import Level\n"
        "print(segment_id('alice', ['e1', 'e2']))\n"
        "print(window_node_id('alice', Level.SESSION, datetime(2024, 3, 31, 8, tzinfo=UTC), 's1'))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout.split()
    assert out == [EXPECTED[0][1], EXPECTED[2][1]]


def test_ids_are_version_5_uuids_in_the_memstream_namespace() -> None:
    for actual, _ in EXPECTED:
        assert uuid.UUID(actual).version == 5
    assert uuid.UUID("28537138-4e46-4f24-93e5-56487cd5f71e") == NAMESPACE


@settings(max_examples=200)
@given(texts, event_lists, texts, event_lists)
def test_segment_ids_differ_for_different_inputs(
    user_a: str, events_a: list[str], user_b: str, events_b: list[str]
) -> None:
    same_input = (user_a, events_a) == (user_b, events_b)
    assert (segment_id(user_a, events_a) == segment_id(user_b, events_b)) == same_input


@settings(max_examples=200)
@given(texts, window_levels, starts, texts, window_levels, starts)
def test_window_ids_differ_for_different_inputs(
    user_a: str, level_a: Level, start_a: datetime, user_b: str, level_b: Level, start_b: datetime
) -> None:
    same_input = (user_a, level_a, start_a) == (user_b, level_b, start_b)
    id_a = window_node_id(user_a, level_a, start_a)
    assert (id_a == window_node_id(user_b, level_b, start_b)) == same_input


@settings(max_examples=200)
@given(texts, starts, texts, texts)
def test_session_ids_depend_on_the_session(
    user: str, start: datetime, session_a: str, session_b: str
) -> None:
    id_a = window_node_id(user, Level.SESSION, start, session_a)
    assert (id_a == window_node_id(user, Level.SESSION, start, session_b)) == (
        session_a == session_b
    )


def test_joining_event_ids_cannot_collide() -> None:
    assert segment_id("u", ["a,b"]) != segment_id("u", ["a", "b"])
    assert segment_id("u", ['a", "b']) != segment_id("u", ["a", "b"])
    assert segment_id("u", ["a"]) != segment_id("u", ["a", ""])


def test_segment_id_depends_on_user_and_order() -> None:
    assert segment_id("alice", ["e1"]) != segment_id("bob", ["e1"])
    assert segment_id("alice", ("e1", "e2")) == segment_id("alice", ["e1", "e2"])


def test_window_id_uses_the_instant_not_its_zone() -> None:
    same_instant = BERLIN_DAY.astimezone(ZoneInfo("America/New_York"))
    assert window_node_id("alice", Level.DAY, same_instant) == EXPECTED[3][1]


def test_a_day_and_a_week_starting_together_get_different_ids() -> None:
    monday = datetime(2024, 1, 29, tzinfo=UTC)
    ids = {window_node_id("alice", level, monday) for level in (Level.DAY, Level.WEEK)}
    assert len(ids) == 2


def test_invalid_inputs_are_rejected() -> None:
    with pytest.raises(ValueError, match="at least one"):
        segment_id("alice", [])
    with pytest.raises(TypeError):
        segment_id("alice", "e1")
    with pytest.raises(ValueError, match="segment_id"):
        window_node_id("alice", Level.SEGMENT, SESSION_START)
    with pytest.raises(ValueError, match="session_id"):
        window_node_id("alice", Level.SESSION, SESSION_START)
    with pytest.raises(ValueError, match="session_id"):
        window_node_id("alice", Level.DAY, SESSION_START, "s1")
    with pytest.raises(ValueError, match="naive"):
        window_node_id("alice", Level.DAY, datetime(2024, 3, 31))


def test_the_same_wall_clock_before_and_after_the_clocks_go_back_names_two_sessions() -> None:
    # 01:58 in St John's on 1 November 2026 happens twice, an hour apart. Local times of one
    # zone compare equal by their wall clocks whatever their fold, so a cache keyed on them
    # handed the second its first's id (seen as a replay naming a session differently).
    zone = ZoneInfo("America/St_Johns")
    second = datetime(2026, 11, 1, 1, 58, tzinfo=zone, fold=1)
    first = datetime(2026, 11, 1, 1, 58, tzinfo=zone, fold=0)
    assert first == second and first.astimezone(UTC) != second.astimezone(UTC)
    named_second = window_node_id("u1", Level.SESSION, second, "s0")
    named_first = window_node_id("u1", Level.SESSION, first, "s0")
    assert named_first != named_second
    assert named_first == window_node_id("u1", Level.SESSION, first.astimezone(UTC), "s0")
