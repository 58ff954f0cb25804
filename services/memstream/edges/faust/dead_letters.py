"""The dead-letter topic: a record memstream could not process, with why, byte for byte."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import UTC, datetime

from memstream.contracts.records import Outbound, RawEvent
from memstream.ports import Publisher


class DeadLetters:
    def __init__(
        self,
        publisher: Publisher,
        topic: str,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._publisher = publisher
        self._topic = topic
        self._clock = clock

    async def send(self, raw: RawEvent, reason: str, field_path: str | None = None) -> None:
        letter = {
            "type": "dead_letter.v1",
            "topic": raw.topic,
            "partition": raw.partition,
            "offset": raw.offset,
            "reason": reason,
            "error_field": field_path,
            "original_b64": base64.b64encode(raw.value).decode(),
            "ts": self._clock().isoformat(),
        }
        await self._publisher.publish([Outbound(self._topic, _key(raw.value), letter)])


def _key(value: bytes) -> str:
    """The user the record was about when it says so, so a user's letters stay together."""
    try:
        doc = json.loads(value)
        if isinstance(doc, dict) and isinstance(doc.get("user_id"), str):
            return str(doc["user_id"])[:128]
    except (ValueError, UnicodeDecodeError):
        pass
    return "unknown"
