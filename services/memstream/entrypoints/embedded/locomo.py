"""The LoCoMo conversation format, replayed as `turn.v1` / `session_end.v1` wire events.

LoCoMo (one JSON file per conversation) stores sessions as `session_N` lists next to a
free-text `session_N_date_time`, and QA items whose `evidence` lists the dia ids that hold
the answer. `memstream ingest` reads such a file; finding the data set and its questions'
measures belong to the lab (`memstream_lab.locomo`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from memstream.domain.calendar import MONTH_NUMBERS

SECONDS_PER_MESSAGE = 30
"""LoCoMo only dates a session's start; messages are spread this many seconds apart."""

_SESSION_KEY = re.compile(r"session_(\d+)")
_DATE_TIME = re.compile(
    r"""\s*(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<ampm>[ap])\.?\s*m\.?\s*
        (?:on\s+)?(?P<day>\d{1,2})\s+(?P<month>[a-z]+)\.?,?\s+(?P<year>\d{4})\s*""",
    re.IGNORECASE | re.VERBOSE,
)
_DIA_ID = re.compile(r"D(\d+):(\d+)")
# Seen in the data: "D:11:26" (a stray colon) and "D8:6; D9:17" (two ids in one string).
_STRAY_COLON = re.compile(r"D:(\d+):(\d+)")
_EVIDENCE_SEPARATORS = re.compile(r"[;,\s]+")


@dataclass(frozen=True, slots=True)
class LocomoMessage:
    dia_id: str
    speaker: str
    text: str
    blip_caption: str | None = None


@dataclass(frozen=True, slots=True)
class LocomoSession:
    number: int
    start: datetime
    messages: tuple[LocomoMessage, ...]

    @property
    def id(self) -> str:
        return f"session_{self.number}"


@dataclass(frozen=True, slots=True)
class LocomoQuestion:
    question: str
    answer: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True, slots=True)
class LocomoConversation:
    sample_id: str
    speakers: tuple[str, str]
    sessions: tuple[LocomoSession, ...]
    questions: tuple[LocomoQuestion, ...]

    @property
    def dia_ids(self) -> frozenset[str]:
        return frozenset(m.dia_id for s in self.sessions for m in s.messages)


def parse_session_datetime(value: str, key: str = "date_time") -> datetime:
    """Parse "1:56 pm on 8 May, 2023" as UTC (LoCoMo times carry no zone)."""
    match = _DATE_TIME.fullmatch(value)
    month = MONTH_NUMBERS.get(match["month"].lower()) if match else None
    if match is None or month is None:
        raise ValueError(f"{key}: cannot parse {value!r}, expected like '1:56 pm on 8 May, 2023'")
    hour = int(match["hour"]) % 12 + (12 if match["ampm"].lower() == "p" else 0)
    try:
        return datetime(
            int(match["year"]), month, int(match["day"]), hour, int(match["minute"]), tzinfo=UTC
        )
    except ValueError as exc:  # e.g. "31 June" or "13:05 pm"
        raise ValueError(f"{key}: invalid date {value!r}: {exc}") from exc


def normalize_evidence(raw: Sequence[str]) -> tuple[str, ...]:
    """Split multi-id strings and repair the stray-colon form; unknown shapes are kept as-is."""
    ids: list[str] = []
    for item in raw:
        for token in _EVIDENCE_SEPARATORS.split(str(item).strip()):
            if token:
                ids.append(_STRAY_COLON.sub(r"D\1:\2", token))
    return tuple(ids)


def is_locomo_document(data: object) -> bool:
    """Whether a parsed JSON document is a LoCoMo conversation (flat or nested layout)."""
    if not isinstance(data, Mapping):
        return False
    body = data.get("conversation", data)
    return (
        isinstance(body, Mapping)
        and "speaker_a" in body
        and any(_SESSION_KEY.fullmatch(key) for key in body)
    )


def conversation_from_dict(data: Mapping[str, Any], sample_id: str) -> LocomoConversation:
    """Build a conversation from a parsed file.

    Accepts the per-file layout (sessions at top level) and the layout of the original
    `locomo10.json` items (sessions under "conversation").
    """
    if not is_locomo_document(data):
        raise ValueError("missing speaker_a or session_N keys")
    body: Mapping[str, Any] = data.get("conversation", data)
    numbers = sorted(int(m[1]) for key in body if (m := _SESSION_KEY.fullmatch(key)))
    # Some files date sessions that have no messages (session_N_date_time without session_N);
    # only sessions with messages become sessions here.
    sessions = tuple(
        LocomoSession(
            number=n,
            start=parse_session_datetime(
                body[f"session_{n}_date_time"], key=f"session_{n}_date_time"
            ),
            messages=tuple(_message(raw) for raw in body[f"session_{n}"]),
        )
        for n in numbers
        if body[f"session_{n}"]
    )
    return LocomoConversation(
        sample_id=sample_id,
        speakers=(str(body["speaker_a"]), str(body["speaker_b"])),
        sessions=sessions,
        questions=tuple(_question(raw) for raw in data.get("qa", ())),
    )


def _message(raw: Mapping[str, Any]) -> LocomoMessage:
    caption = raw.get("blip_caption")
    return LocomoMessage(
        dia_id=str(raw["dia_id"]),
        speaker=str(raw["speaker"]),
        text=str(raw["text"]),
        blip_caption=str(caption) if caption else None,
    )


def _question(raw: Mapping[str, Any]) -> LocomoQuestion:
    # Adversarial (category 5) items carry `adversarial_answer` instead of `answer`;
    # some answers are numbers (years). Everything becomes a string for uniform scoring.
    answer = raw.get("answer")
    if answer is None:
        answer = raw.get("adversarial_answer", "")
    return LocomoQuestion(
        question=str(raw["question"]),
        answer=str(answer),
        evidence=normalize_evidence(raw.get("evidence", ())),
        category=int(raw["category"]),
    )


def conversation_events(
    conv: LocomoConversation, user_id: str | None = None
) -> list[dict[str, Any]]:
    """Wire events for the turns topic: every message as `turn.v1`, each session closed by
    `session_end.v1`, ordered by time. speaker_a is the user whose memory is built."""
    user = user_id or f"locomo-{conv.sample_id}"
    keyed: list[tuple[datetime, int, dict[str, Any]]] = []
    for session in conv.sessions:
        last_ts = session.start
        for seq, message in enumerate(session.messages):
            last_ts = session.start + timedelta(seconds=seq * SECONDS_PER_MESSAGE)
            role = "user" if message.speaker == conv.speakers[0] else "other"
            turn = _turn(user, session.id, seq, role, message, last_ts)
            keyed.append((last_ts, len(keyed), turn))
        end = {"type": "session_end.v1", "user_id": user, "session_id": session.id}
        keyed.append((last_ts, len(keyed), {**end, "ts": last_ts.isoformat()}))
    # Sessions are dated independently; a stable sort keeps each session_end after its turns
    # even if two sessions were ever dated to overlap.
    keyed.sort(key=lambda item: (item[0], item[1]))
    return [event for _, _, event in keyed]


def _turn(
    user: str, session_id: str, seq: int, role: str, message: LocomoMessage, ts: datetime
) -> dict[str, Any]:
    # The caption of a shared photo is metadata, not words spoken: the L1 keeps it marked.
    extra = {"metadata": {"blip_caption": message.blip_caption}} if message.blip_caption else {}
    return {
        "type": "turn.v1",
        "event_id": message.dia_id,
        "user_id": user,
        "session_id": session_id,
        "seq": seq,
        "speaker": message.speaker,
        "role": role,
        "text": message.text,
        "ts": ts.isoformat(),
        "tz": "UTC",
        **extra,
    }
