"""LoCoMo parsing and replay, against the real files in ../shared/data/locomo."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstream_lab.locomo import (
    ADVERSARIAL_CATEGORY,
    SECONDS_PER_MESSAGE,
    LocomoConversation,
    conversation_events,
    conversation_files,
    conversation_from_dict,
    find_repo_root,
    load_conversation,
    locomo_data_dir,
    message_text,
    normalize_evidence,
    parse_session_datetime,
    unknown_evidence,
)

# sample id -> (sessions with messages, messages, QA items); counted from the files.
EXPECTED = {
    "26": (19, 419, 199),
    "30": (19, 369, 105),
    "41": (32, 663, 193),
    "42": (29, 629, 260),
    "43": (29, 680, 242),
}
# Evidence ids that name no message even after repair: one points past the end of
# session 10, one is a bare "D".
UNREPAIRABLE_EVIDENCE = {"42": {"D10:19", "D"}}


@pytest.fixture(scope="module")
def data_dir() -> Path:
    # The data is required, never optional: a missing directory must fail the run.
    try:
        return locomo_data_dir()
    except FileNotFoundError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def conversations(data_dir: Path) -> dict[str, LocomoConversation]:
    return {path.stem: load_conversation(path) for path in conversation_files(data_dir)}


def test_data_dir_is_found_next_to_the_repo() -> None:
    root = find_repo_root()
    assert (root / "pyproject.toml").is_file()
    assert locomo_data_dir(root) == (root.parent / "shared" / "data" / "locomo").resolve()
    assert sorted(p.stem for p in conversation_files()) == sorted(EXPECTED)


def test_missing_data_dir_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="LoCoMo data not found"):
        locomo_data_dir(tmp_path)


@pytest.mark.parametrize("sample_id", sorted(EXPECTED))
def test_counts(conversations: dict[str, LocomoConversation], sample_id: str) -> None:
    conv = conversations[sample_id]
    sessions, messages, questions = EXPECTED[sample_id]
    assert conv.sample_id == sample_id
    assert len(conv.sessions) == sessions
    assert sum(len(s.messages) for s in conv.sessions) == messages
    assert len(conv.dia_ids) == messages  # dia ids are unique within a conversation
    assert len(conv.questions) == questions
    assert all(isinstance(q.answer, str) for q in conv.questions)
    assert all(1 <= q.category <= ADVERSARIAL_CATEGORY for q in conv.questions)


@pytest.mark.parametrize("sample_id", sorted(EXPECTED))
def test_sessions_are_numbered_and_dated_in_order(
    conversations: dict[str, LocomoConversation], sample_id: str
) -> None:
    sessions = conversations[sample_id].sessions
    assert [s.number for s in sessions] == list(range(1, len(sessions) + 1))
    assert [s.id for s in sessions][:2] == ["session_1", "session_2"]
    starts = [s.start for s in sessions]
    assert starts == sorted(starts)
    assert all(start.tzinfo is UTC for start in starts)


@pytest.mark.parametrize("sample_id", sorted(EXPECTED))
def test_evidence_exists_or_is_reported(
    conversations: dict[str, LocomoConversation], sample_id: str
) -> None:
    conv = conversations[sample_id]
    reported = unknown_evidence(conv)
    reported_ids = {evidence for _, evidence in reported}
    for question in conv.questions:
        if question.category == ADVERSARIAL_CATEGORY:
            continue
        for evidence in question.evidence:
            assert evidence in conv.dia_ids or evidence in reported_ids
    assert reported_ids == UNREPAIRABLE_EVIDENCE.get(sample_id, set())
    for index, evidence in reported:
        assert evidence in conv.questions[index].evidence


def test_malformed_evidence_is_repaired(conversations: dict[str, LocomoConversation]) -> None:
    # In the raw files: "D8:6; D9:17" (26) and "D:11:26" (43).
    evidence_26 = {e for q in conversations["26"].questions for e in q.evidence}
    evidence_43 = {e for q in conversations["43"].questions for e in q.evidence}
    assert {"D8:6", "D9:17"} <= evidence_26
    assert "D11:26" in evidence_43


def test_first_session_of_26(conversations: dict[str, LocomoConversation]) -> None:
    conv = conversations["26"]
    assert conv.speakers == ("Caroline", "Melanie")
    first = conv.sessions[0]
    assert first.start == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert first.messages[0].dia_id == "D1:1"
    assert first.messages[0].speaker == "Caroline"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("10:37 am on 27 June, 2023", datetime(2023, 6, 27, 10, 37, tzinfo=UTC)),
        ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9, tzinfo=UTC)),
        ("12:30 pm on 1 January, 2024", datetime(2024, 1, 1, 12, 30, tzinfo=UTC)),
        ("9:05 PM on 3 Sept 2022", datetime(2022, 9, 3, 21, 5, tzinfo=UTC)),
        ("  7:00 a.m. on 14 feb, 2023 ", datetime(2023, 2, 14, 7, 0, tzinfo=UTC)),
    ],
)
def test_parse_session_datetime(text: str, expected: datetime) -> None:
    assert parse_session_datetime(text) == expected


@pytest.mark.parametrize("text", ["yesterday", "1:56 pm on 8 Maybe, 2023", "1:56 on 8 May, 2023"])
def test_unparseable_date_names_the_key(text: str) -> None:
    with pytest.raises(ValueError, match="session_7_date_time"):
        parse_session_datetime(text, key="session_7_date_time")


def test_impossible_date_names_the_key() -> None:
    with pytest.raises(ValueError, match=r"session_2_date_time.*31 June"):
        parse_session_datetime("1:00 pm on 31 June, 2023", key="session_2_date_time")


def test_bad_date_in_a_file_names_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "99.json"
    path.write_text(
        '{"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "soon",'
        ' "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}], "qa": []}'
    )
    with pytest.raises(ValueError, match=r"99\.json.*session_1_date_time"):
        load_conversation(path)


def test_normalize_evidence() -> None:
    assert normalize_evidence(["D1:2"]) == ("D1:2",)
    assert normalize_evidence(["D8:6; D9:17", "D3:1,D3:2"]) == ("D8:6", "D9:17", "D3:1", "D3:2")
    assert normalize_evidence(["D:11:26"]) == ("D11:26",)
    assert normalize_evidence(["D", ""]) == ("D",)


def _tiny(**extra: object) -> dict[str, object]:
    return {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "9:00 am on 2 March, 2024",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "Look at this!", "blip_caption": "a cat"},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Cute."},
        ],
        # Dated but empty: LoCoMo has such keys; they are not sessions.
        "session_2_date_time": "9:00 am on 3 March, 2024",
        "session_2": [],
        "session_3_date_time": "9:00 am on 4 March, 2024",
        "qa": [
            {"question": "Which year?", "answer": 2022, "evidence": ["D1:1"], "category": 2},
            {"question": "Trap?", "adversarial_answer": "cat", "evidence": [], "category": 5},
        ],
        **extra,
    }


def test_dated_sessions_without_messages_are_skipped() -> None:
    conv = conversation_from_dict(_tiny(), sample_id="t")
    assert [s.number for s in conv.sessions] == [1]


def test_answers_become_strings() -> None:
    conv = conversation_from_dict(_tiny(), sample_id="t")
    assert [q.answer for q in conv.questions] == ["2022", "cat"]


def test_nested_layout_is_accepted() -> None:
    data = _tiny()
    qa = data.pop("qa")
    conv = conversation_from_dict({"conversation": data, "qa": qa}, sample_id="n")
    assert len(conv.sessions) == 1
    assert len(conv.questions) == 2


def test_caption_is_appended_to_the_text() -> None:
    conv = conversation_from_dict(_tiny(), sample_id="t")
    first, second = conv.sessions[0].messages
    assert message_text(first) == "Look at this! [shares a photo: a cat]"
    assert message_text(second) == "Cute."


def test_events_of_a_tiny_conversation() -> None:
    events = conversation_events(conversation_from_dict(_tiny(), sample_id="t"))
    assert events == [
        {
            "type": "turn.v1",
            "event_id": "D1:1",
            "user_id": "locomo-t",
            "session_id": "session_1",
            "seq": 0,
            "speaker": "Ann",
            "role": "user",
            "text": "Look at this!",
            "ts": "2024-03-02T09:00:00+00:00",
            "tz": "UTC",
            "metadata": {"blip_caption": "a cat"},
        },
        {
            "type": "turn.v1",
            "event_id": "D1:2",
            "user_id": "locomo-t",
            "session_id": "session_1",
            "seq": 1,
            "speaker": "Bob",
            "role": "other",
            "text": "Cute.",
            "ts": "2024-03-02T09:00:30+00:00",
            "tz": "UTC",
        },
        {
            "type": "session_end.v1",
            "user_id": "locomo-t",
            "session_id": "session_1",
            "ts": "2024-03-02T09:00:30+00:00",
        },
    ]


def test_user_id_can_be_given() -> None:
    events = conversation_events(conversation_from_dict(_tiny(), sample_id="t"), user_id="u1")
    assert {e["user_id"] for e in events} == {"u1"}


@pytest.mark.parametrize("sample_id", sorted(EXPECTED))
def test_events_of_real_conversations(
    conversations: dict[str, LocomoConversation], sample_id: str
) -> None:
    conv = conversations[sample_id]
    events = conversation_events(conv)
    turns = [e for e in events if e["type"] == "turn.v1"]
    ends = [e for e in events if e["type"] == "session_end.v1"]
    sessions, messages, _ = EXPECTED[sample_id]
    assert len(turns) == messages
    assert len(ends) == sessions
    assert {t["event_id"] for t in turns} == conv.dia_ids
    assert {e["user_id"] for e in events} == {f"locomo-{sample_id}"}
    speaker_a, speaker_b = conv.speakers
    assert {t["role"] for t in turns if t["speaker"] == speaker_a} == {"user"}
    assert {t["role"] for t in turns if t["speaker"] == speaker_b} == {"other"}

    times = [datetime.fromisoformat(e["ts"]) for e in events]
    assert times == sorted(times)
    assert all(t.utcoffset() == timedelta(0) for t in times)

    by_session: dict[str, list[dict[str, object]]] = {}
    for event in events:
        by_session.setdefault(str(event["session_id"]), []).append(event)
    for session in conv.sessions:
        session_events = by_session[session.id]
        *session_turns, end = session_events
        assert end["type"] == "session_end.v1"
        assert [t["seq"] for t in session_turns] == list(range(len(session.messages)))
        assert end["ts"] == session_turns[-1]["ts"]
        expected_last = session.start + timedelta(
            seconds=(len(session.messages) - 1) * SECONDS_PER_MESSAGE
        )
        assert datetime.fromisoformat(str(end["ts"])) == expected_last


def test_captions_reach_the_turn_metadata(conversations: dict[str, LocomoConversation]) -> None:
    conv = conversations["26"]
    captioned = {m.dia_id for s in conv.sessions for m in s.messages if m.blip_caption}
    assert len(captioned) == 116
    shared = {
        e["event_id"] for e in conversation_events(conv) if "blip_caption" in e.get("metadata", {})
    }
    assert shared == captioned
