"""The LoCoMo data set: where its files are, and what the measures need beyond the format.

The files are read from `../shared/data/locomo/` and never copied into the repo. The format
itself (`memstream ingest` reads it too) is `memstream.entrypoints.embedded.locomo`, whose
names are re-exported here so the lab has one place to import LoCoMo from.
"""

from __future__ import annotations

import json
from pathlib import Path

from memstream.entrypoints.embedded.locomo import (
    SECONDS_PER_MESSAGE,
    LocomoConversation,
    LocomoMessage,
    LocomoQuestion,
    LocomoSession,
    conversation_events,
    conversation_from_dict,
    is_locomo_document,
    normalize_evidence,
    parse_session_datetime,
)

__all__ = [
    "ADVERSARIAL_CATEGORY",
    "SECONDS_PER_MESSAGE",
    "LocomoConversation",
    "LocomoMessage",
    "LocomoQuestion",
    "LocomoSession",
    "conversation_events",
    "conversation_files",
    "conversation_from_dict",
    "find_repo_root",
    "is_locomo_document",
    "load_conversation",
    "locomo_data_dir",
    "message_text",
    "normalize_evidence",
    "parse_session_datetime",
    "unknown_evidence",
]

ADVERSARIAL_CATEGORY = 5
"""Questions with no answer in the conversation; the measures in DESIGN.md leave them out."""


def find_repo_root(start: Path | None = None) -> Path:
    """The nearest ancestor holding pyproject.toml and services/ (the repo checkout this code
    runs from; the lab's own pyproject.toml, in lab/, is passed over)."""
    here = (start or Path(__file__)).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "pyproject.toml").is_file() and (candidate / "services").is_dir():
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


def load_conversation(path: Path | str) -> LocomoConversation:
    """Read one conversation file; the sample id is the file stem (e.g. "26")."""
    path = Path(path)
    with path.open(encoding="utf-8") as handle:
        data = json.load(handle)
    try:
        return conversation_from_dict(data, sample_id=path.stem)
    except (KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"{path}: not a readable LoCoMo conversation: {exc}") from exc


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
