"""Read LoCoMo conversations and replay them as `turn.v1` / `session_end.v1` wire events.

LoCoMo (one JSON file per conversation) stores sessions as `session_N` lists next to a
free-text `session_N_date_time`, and QA items whose `evidence` lists the dia ids that hold
the answer. The files are read from `../shared/data/locomo/` and never copied into the repo.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memstream.domain.calendar import MONTH_NUMBERS

SECONDS_PER_MESSAGE = 30
"""LoCoMo only dates a session's start; messages are spread this many seconds apart."""

ADVERSARIAL_CATEGORY = 5
"""Questions with no answer in the conversation; the measures in DESIGN.md leave them out."""

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


def find_repo_root(start: Path | None = None) -> Path:
    """The nearest ancestor holding pyproject.toml (the repo checkout this code runs from)."""
    here = (start or Path(__file__)).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "pyproject.toml").is_file():
            return candidate
    raise FileNotFoundError(f"no pyproject.toml above {here}: not running from a checkout")


def locomo_data_dir(repo_root: Path | None = None) -> Path:
    """`../shared/data/locomo` next to the repo; raises if it is missing, so tests fail loudly."""
    root = repo_root if repo_root is not None else find_repo_root()
    data_dir = (root.parent / "shared" / "data" / "locomo").resolve()
    if not data_dir.is_dir():
        raise FileNotFoundError(f"LoCoMo data not found at {data_dir}")
    return data_dir


def conversation_files(data_dir: Path | None = None) -> list[Path]:
    """Every conversation file of the data directory, in a stable order."""
    return sorted((data_dir or locomo_data_dir()).glob("*.json"))


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


def load_conversation(path: Path | str) -> LocomoConversation:
    """Read one conversation file; the sample id is the file stem (e.g. "26")."""
    path = Path(path)
    with path.open(encoding="utf-8") as handle:
        data = json.load(handle)
    try:
        return conversation_from_dict(data, sample_id=path.stem)
    except (KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"{path}: not a readable LoCoMo conversation: {exc}") from exc


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


def unknown_evidence(conv: LocomoConversation) -> list[tuple[int, str]]:
    """(question index, evidence id) pairs naming no message of the conversation.

    A few LoCoMo evidence ids are malformed beyond repair ("D") or point past the end of a
    session; the measures report them instead of failing.
    """
    known = conv.dia_ids
    return [
        (index, evidence)
        for index, question in enumerate(conv.questions)
        for evidence in question.evidence
        if evidence not in known
    ]


def message_text(message: LocomoMessage) -> str:
    """The text a turn carries; a shared photo is described by its caption, which can hold
    the evidence a question needs."""
    if message.blip_caption:
        return f"{message.text} [shares a photo: {message.blip_caption}]"
    return message.text


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
