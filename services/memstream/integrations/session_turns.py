"""The messages one conversation publishes to memstream: their order and their event ids.

Framework-free: each adapter says which of its messages are the user's and the assistant's,
and this builds the `turn.v1` values, numbers them, and remembers their ids so the adapter
can forget them again when its framework clears or pops a message.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from memstream.client.events import forget_event, turn_event

Role = Literal["user", "assistant"]
# The turn schema's limit: longer messages are cut rather than refused, so one pasted
# document does not stop a conversation from being remembered.
MAX_TEXT = 16000


@dataclass
class SessionTurns:
    """The turns of one session of one user, numbered from `next_seq` in the order sent."""

    user_id: str
    session_id: str
    next_seq: int = 0
    user_name: str | None = None
    assistant_name: str | None = None
    published: list[str] = field(default_factory=list)

    def turn(self, role: Role, text: str, *, event_id: str | None = None) -> dict[str, Any]:
        """The next `turn.v1` value; its event id is kept for `forget_*`. A caller passing the
        framework's own message id makes a repeated add harmless (the workers drop a resent id)."""
        speaker = self.user_name if role == "user" else self.assistant_name
        value = turn_event(
            user_id=self.user_id,
            session_id=self.session_id,
            seq=self.next_seq,
            text=text[:MAX_TEXT],
            role=role,
            speaker=speaker,
            event_id=event_id or str(uuid.uuid4()),
        )
        self.next_seq += 1
        self.published.append(str(value["event_id"]))
        return value

    def forget_all(self) -> dict[str, Any] | None:
        """A `forget.v1` value for every message published so far (None if there is none)."""
        return self._forget(list(self.published))

    def forget_last(self, event_id: str) -> dict[str, Any] | None:
        """A `forget.v1` value for one published message (None if it was never published)."""
        return self._forget([event_id] if event_id in self.published else [])

    def _forget(self, ids: Sequence[str]) -> dict[str, Any] | None:
        if not ids:
            return None
        self.published = [i for i in self.published if i not in ids]
        return forget_event(user_id=self.user_id, message_ids=ids)
