"""The bundled demo conversations: reproducible, and shaped to exercise the calendar windows."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from memstream.entrypoints.embedded.demo import DEMO_EVENTS, DEMO_QUESTIONS
from memstream.entrypoints.embedded.demo.generate import ASSISTANT, write

ZONES = {"ana": "Europe/Lisbon", "kenji": "Asia/Tokyo"}
Event = dict[str, Any]


@pytest.fixture(scope="module")
def events() -> list[Event]:
    with DEMO_EVENTS.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


@pytest.fixture(scope="module")
def sessions(events: list[Event]) -> dict[str, list[Event]]:
    """Turns per session id, in file order."""
    grouped: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        if event["type"] == "turn.v1":
            grouped[event["session_id"]].append(event)
    return dict(grouped)


def _local(event: Event) -> datetime:
    return datetime.fromisoformat(event["ts"]).astimezone(ZoneInfo(event["tz"]))


def test_regenerating_gives_identical_bytes(tmp_path: Path) -> None:
    events_path, questions_path = write(tmp_path)
    assert events_path.read_bytes() == DEMO_EVENTS.read_bytes()
    assert questions_path.read_bytes() == DEMO_QUESTIONS.read_bytes()


def test_file_stays_small() -> None:
    assert DEMO_EVENTS.stat().st_size < 300_000


def test_users_and_time_zones(events: list[Event]) -> None:
    assert {e["user_id"] for e in events} == set(ZONES)
    for event in events:
        assert event["tz"] == ZONES[event["user_id"]]
        instant = datetime.fromisoformat(event["ts"])
        # The offset written is the zone's offset at that instant (DST included).
        assert instant.utcoffset() == instant.astimezone(ZoneInfo(event["tz"])).utcoffset()


def test_sorted_by_time(events: list[Event]) -> None:
    instants = [datetime.fromisoformat(e["ts"]) for e in events]
    assert instants == sorted(instants)
    for user in ZONES:
        mine = [datetime.fromisoformat(e["ts"]) for e in events if e["user_id"] == user]
        assert mine == sorted(mine)


def test_span_and_month_boundaries(events: list[Event]) -> None:
    for user in ZONES:
        local = [_local(e) for e in events if e["user_id"] == user]
        assert max(local) - min(local) >= timedelta(weeks=6)
        assert len({(t.year, t.month) for t in local}) >= 2


def test_enough_sessions(sessions: dict[str, list[Event]]) -> None:
    assert len(sessions) >= 30
    per_user: dict[str, int] = defaultdict(int)
    for turns in sessions.values():
        per_user[turns[0]["user_id"]] += 1
    assert all(count >= 14 for count in per_user.values())


def test_session_shape(sessions: dict[str, list[Event]]) -> None:
    for session_id, turns in sessions.items():
        assert 6 <= len(turns) <= 14, session_id
        assert [t["seq"] for t in turns] == list(range(len(turns)))
        assert [t["role"] for t in turns] == ["user", "assistant"] * (len(turns) // 2)
        assert {t["speaker"] for t in turns if t["role"] == "assistant"} == {ASSISTANT}
        assert len({t["user_id"] for t in turns}) == 1
        assert all(t["text"].strip() and "{" not in t["text"] for t in turns)


def test_event_ids_are_unique(events: list[Event]) -> None:
    turns = [e for e in events if e["type"] == "turn.v1"]
    assert len({t["event_id"] for t in turns}) == len(turns)
    assert all(t["event_id"] == f"{t['session_id']}-{t['seq']}" for t in turns)


def test_every_session_but_one_per_user_is_ended(
    events: list[Event], sessions: dict[str, list[Event]]
) -> None:
    ends = {e["session_id"]: e for e in events if e["type"] == "session_end.v1"}
    assert set(ends) <= set(sessions)
    open_sessions = [sid for sid in sessions if sid not in ends]
    assert sorted(sessions[sid][0]["user_id"] for sid in open_sessions) == sorted(ZONES)
    for session_id, end in ends.items():
        assert end["user_id"] == sessions[session_id][0]["user_id"]
        assert end["ts"] == sessions[session_id][-1]["ts"]
        # The end event follows the session's last turn in the stream.
        assert events.index(end) > events.index(sessions[session_id][-1])


def test_a_session_crosses_local_midnight(sessions: dict[str, list[Event]]) -> None:
    crossing = {
        turns[0]["user_id"]
        for turns in sessions.values()
        if _local(turns[0]).date() != _local(turns[-1]).date()
    }
    assert crossing == set(ZONES)


def test_midnight_remarks_are_after_midnight(events: list[Event]) -> None:
    remarks = [e for e in events if "past midnight" in e.get("text", "")]
    assert len(remarks) == len(ZONES)
    assert all(_local(e).hour == 0 for e in remarks)


def test_questions_point_at_user_messages(events: list[Event]) -> None:
    questions = json.loads(DEMO_QUESTIONS.read_text(encoding="utf-8"))
    assert set(questions) == set(ZONES)
    turns = {e["event_id"]: e for e in events if e["type"] == "turn.v1"}
    for user, items in questions.items():
        assert len(items) >= 8
        for item in items:
            assert item["question"] and item["answer"] and item["evidence"]
            for event_id in item["evidence"]:
                assert turns[event_id]["user_id"] == user
                assert turns[event_id]["role"] == "user"
