"""The dead-letter topic: a record memstream could not process, with why and where it was.

A letter always fits the producer's request limit, whatever the record: the original's first
`kept_bytes` bytes travel base64-encoded (`original_b64`), with its full size and SHA-256,
and `truncated` says when the rest was cut. The record itself stays on its source topic at
(`topic`, `partition`, `offset`) until retention removes it (docs/operations.md says how to
fetch it). That position is also the letter's stable id (`letter_id`): a record dead-lettered
twice (a crash between the letter and the offset commit) gives two letters with one id.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime

from memstream.contracts.records import Outbound, RawEvent
from memstream.edges.http.schemas import USER_ID_PATTERN
from memstream.ports import Publisher

# 256 KiB of original is 342 KiB of base64: far below the producer's 1 MiB request limit,
# with room for the reason and the envelope, and enough to see what the record was.
KEPT_BYTES = 256 * 1024
MAX_REASON = 2000  # the schema's limits (topics/memstream.dlq.v1.json)
MAX_FIELD = 200
MAX_KEY = 128
_USER_ID = re.compile(USER_ID_PATTERN)


def letter_id(raw: RawEvent) -> str:
    """Where the record is on its source topic: the same for every letter about it."""
    return f"{raw.topic}/{raw.partition}/{raw.offset}"


class DeadLetters:
    def __init__(
        self,
        publisher: Publisher,
        topic: str,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        *,
        kept_bytes: int = KEPT_BYTES,
    ) -> None:
        self._publisher = publisher
        self._topic = topic
        self._clock = clock
        self._kept_bytes = kept_bytes

    def letter(self, raw: RawEvent, reason: str, field_path: str | None = None) -> Outbound:
        """The dead letter about `raw`, keyed by its user when the record names one."""
        kept = raw.value[: self._kept_bytes]
        user = _user(raw.value)
        value = {
            "type": "dead_letter.v1",
            # Whose key seals it: only an id a user can have (a bad record names anything).
            "user_id": user if user is not None and _USER_ID.match(user) else None,
            "letter_id": letter_id(raw),
            "topic": raw.topic,
            "partition": raw.partition,
            "offset": raw.offset,
            "reason": _printable(reason, MAX_REASON) or "unknown",
            "error_field": _printable(field_path, MAX_FIELD) if field_path else None,
            "original_b64": base64.b64encode(kept).decode(),
            "original_bytes": len(raw.value),
            "original_sha256": hashlib.sha256(raw.value).hexdigest(),
            "truncated": len(kept) < len(raw.value),
            "ts": self._clock().isoformat(),
        }
        return Outbound(self._topic, user or "unknown", value)

    async def send(self, raw: RawEvent, reason: str, field_path: str | None = None) -> None:
        await self._publisher.publish([self.letter(raw, reason, field_path)])


def _printable(text: str | None, limit: int) -> str:
    """`text` cut to `limit` characters that UTF-8 can carry (no lone surrogates)."""
    if not text:
        return ""
    return text[:limit].encode("utf-8", "replace").decode("utf-8")


def _user(value: bytes) -> str | None:
    """The user the record was about when it says so: the letter's key (so a user's letters
    stay together) and whose data key seals it (`edges/sealing.py`)."""
    try:
        doc = json.loads(value)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    user = doc.get("user_id") if isinstance(doc, dict) else None
    if not isinstance(user, str) or not user:
        return None
    return _printable(user, MAX_KEY)
