"""Event files: JSONL of wire events, or LoCoMo conversations detected by their keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memstream.entrypoints.embedded.demo import DEMO_EVENTS
from memstream.entrypoints.embedded.sources import count_events, read_events
from memstream_lab.locomo import conversation_events, load_conversation, locomo_data_dir

TURN = {
    "type": "turn.v1",
    "event_id": "e1",
    "user_id": "u1",
    "session_id": "s1",
    "seq": 0,
    "speaker": "Ana",
    "role": "user",
    "text": "hello",
    "ts": "2025-01-20T19:10:00+00:00",
}
END = {"type": "session_end.v1", "user_id": "u1", "session_id": "s1", "ts": TURN["ts"]}


@pytest.fixture(scope="module")
def locomo_26() -> Path:
    try:
        return locomo_data_dir() / "26.json"
    except FileNotFoundError as exc:
        pytest.fail(str(exc))


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_jsonl_events_in_file_order(tmp_path: Path) -> None:
    path = _write(tmp_path / "events.jsonl", [json.dumps(TURN), "", "   ", json.dumps(END)])
    assert list(read_events(path)) == [TURN, END]
    assert count_events(path) == 2


def test_jsonl_is_detected_by_content_not_suffix(tmp_path: Path) -> None:
    path = _write(tmp_path / "events.json", [json.dumps(TURN), json.dumps(END)])
    assert list(read_events(str(path))) == [TURN, END]


def test_bad_line_names_its_number(tmp_path: Path) -> None:
    path = _write(tmp_path / "events.jsonl", [json.dumps(TURN), "", '{"type": "turn.v1",'])
    events = read_events(path)
    assert next(events) == TURN
    with pytest.raises(ValueError, match="line 3: invalid JSON"):
        next(events)


def test_bad_first_line_names_line_one(tmp_path: Path) -> None:
    path = _write(tmp_path / "events.jsonl", ["not json", json.dumps(TURN)])
    with pytest.raises(ValueError, match="line 1: invalid JSON"):
        list(read_events(path))


def test_line_that_is_not_an_object(tmp_path: Path) -> None:
    path = _write(tmp_path / "events.jsonl", [json.dumps(TURN), "[1, 2]"])
    with pytest.raises(ValueError, match="line 2: expected a JSON object"):
        list(read_events(path))


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n", encoding="utf-8")
    assert list(read_events(path)) == []
    assert count_events(path) == 0


def test_locomo_file_is_replayed(locomo_26: Path) -> None:
    expected = conversation_events(load_conversation(locomo_26))
    assert list(read_events(locomo_26)) == expected
    assert count_events(locomo_26) == len(expected) == 419 + 19


def test_minified_locomo_file_is_detected(locomo_26: Path, tmp_path: Path) -> None:
    # A scratch copy on one line, to check detection does not rely on pretty-printing.
    path = tmp_path / "26.json"
    path.write_text(json.dumps(json.loads(locomo_26.read_text(encoding="utf-8"))))
    assert list(read_events(path)) == list(read_events(locomo_26))


def test_broken_locomo_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "7.json"
    path.write_text(
        json.dumps(
            {
                "speaker_a": "A",
                "speaker_b": "B",
                "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}],
            },
            indent=2,
        )
    )
    with pytest.raises(ValueError, match=r"7\.json.*session_1_date_time"):
        list(read_events(path))


def test_demo_file_is_readable() -> None:
    events = list(read_events(DEMO_EVENTS))
    assert len(events) == count_events(DEMO_EVENTS) > 0
    assert {e["type"] for e in events} == {"turn.v1", "session_end.v1"}
