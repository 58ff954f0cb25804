"""The events a producer sends, built and checked against the topic catalog before they leave.

A value the catalog refuses raises `InvalidEvent` with the same field-level reasons the
workers would give the record on the dead-letter topic (`ts: bad timestamp ...`), so a
mistake shows up in the producer's stack trace instead of in the DLQ.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any

from memstream.contracts.catalog import Catalog, ValidationProblem

Role = str  # "user" | "assistant" | "other"; the schema says which


class InvalidEvent(ValueError):
    """A value the catalog refuses; `problems` lists each field at fault."""

    def __init__(self, problems: Sequence[ValidationProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(str(p) for p in self.problems))


def _timestamp(value: datetime | str | None) -> str:
    if value is None:
        return datetime.now(UTC).isoformat()
    return value.isoformat() if isinstance(value, datetime) else value


def turn_event(
    *,
    user_id: str,
    session_id: str,
    seq: int,
    text: str,
    role: Role = "user",
    speaker: str | None = None,
    ts: datetime | str | None = None,
    tz: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    event_id: str | None = None,
    expires_at: datetime | str | None = None,
    flush: bool = False,
) -> dict[str, Any]:
    """A `turn.v1` value. The event id (the workers' dedup key) is a new uuid4 when not given:
    build the value once and send that, so a retry sends the same id. With `expires_at`,
    memstream forgets the message (and rewrites what was derived from it) at that time. With
    `flush`, a user's message is written as a memory at once instead of waiting for its reply."""
    value: dict[str, Any] = {
        "type": "turn.v1",
        "event_id": event_id or str(uuid.uuid4()),
        "user_id": user_id,
        "session_id": session_id,
        "seq": seq,
        "speaker": speaker or role,
        "role": role,
        "text": text,
        "ts": _timestamp(ts),
    }
    if tz is not None:
        value["tz"] = tz
    if metadata:
        value["metadata"] = dict(metadata)
    if expires_at is not None:
        value["expires_at"] = _timestamp(expires_at)
    if flush:
        value["flush"] = True
    return value


def session_end_event(
    *, user_id: str, session_id: str, ts: datetime | str | None = None, tz: str | None = None
) -> dict[str, Any]:
    """A `session_end.v1` value: closes the session now instead of after the idle timeout."""
    value = {"type": "session_end.v1", "user_id": user_id, "session_id": session_id}
    value["ts"] = _timestamp(ts)
    if tz is not None:
        value["tz"] = tz
    return value


def forget_event(*, user_id: str, message_ids: Sequence[str] = ()) -> dict[str, Any]:
    """A `forget.v1` value: the workers drop the user's in-flight state and memories, or,
    with `message_ids`, only those messages and what was derived from them."""
    value: dict[str, Any] = {"type": "forget.v1", "user_id": user_id}
    if message_ids:
        value["message_ids"] = list(dict.fromkeys(message_ids))
    return value


def rebuild_event(
    *,
    user_id: str,
    rebuild_id: str | None = None,
    since: date | None = None,
    levels: Sequence[int] | None = None,
) -> dict[str, Any]:
    """A `rebuild.v1` value: re-derive the user's memories from their stored messages with the
    workers' current backend, prompts and embedder (only those ending on or after `since`, of
    `levels`). The id (a new one when not given) names the rebuild."""
    value: dict[str, Any] = {
        "type": "rebuild.v1",
        "user_id": user_id,
        "rebuild_id": rebuild_id or uuid.uuid4().hex,
    }
    if since is not None:
        value["from"] = since.isoformat()
    if levels is not None and set(levels) != {1, 2, 3, 4, 5}:
        value["levels"] = sorted(set(levels))
    return value


def checked(catalog: Catalog, value: Mapping[str, Any]) -> tuple[str, str]:
    """The topic and key for `value`, once the catalog accepts it; else `InvalidEvent`."""
    problems = catalog.validate(None, dict(value))
    if problems:
        raise InvalidEvent(problems)
    spec = catalog.topic_for_type(str(value["type"]))
    assert spec is not None  # a valid value has a known type
    return spec.name, str(value["user_id"])  # every topic is keyed by user (the catalog's key)
