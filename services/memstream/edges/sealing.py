"""The sealing publisher: every record memstream publishes passes through it, and those that
carry a user's words leave sealed under the user's data key (`contracts.sealed`).

- The memories topic: `memory.v1` and the fact events are sealed; removals, forgets,
  consolidations and rebuilds (ids, times, counts) go as they are.
- The dead-letter topic: a letter about a record that names its user is sealed whole; a
  letter about a record that names none (not JSON, no `user_id`) keeps no original bytes,
  since no forget could ever find it (its hash, size and place on the source topic stay).
- A letter about a forgotten user (no key, and none can be made while its tombstone
  stands) keeps no original bytes either: a letter is never dropped. A letter about a user
  id that has no key yet (its first record was the bad one) makes one, as a first turn would.
- Everything else (the windows topic, the turns topic's forgets and ticks) holds no words
  and goes as it is.

A record of a user that has no key to seal under (forgotten) is not published: memstream
never writes a forgotten user's words again. Where the key is made and why that cannot race
a forget: `adapters/redis/datakeys.py`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from memstream.contracts.records import Outbound
from memstream.contracts.sealed import (
    SEALED_LETTER_TYPE,
    SEALED_LETTER_TYPES,
    SEALED_MEMORY_TYPES,
    SEALED_TYPE,
    seal,
)
from memstream.domain.frozen import replace
from memstream.ports import DataKeys, Publisher

log = logging.getLogger(__name__)


class SealingPublisher:
    """`ports.Publisher` around another: seals what carries words, then publishes."""

    def __init__(
        self, inner: Publisher, keys: DataKeys, *, memories_topic: str, dlq_topic: str
    ) -> None:
        self._inner = inner
        self._keys = keys
        self.inner = inner  # the publisher it wraps: raw records (tests, tools) go through it
        self._sealed_types = {memories_topic: SEALED_MEMORY_TYPES, dlq_topic: SEALED_LETTER_TYPES}
        self._dlq = dlq_topic

    def _owner(self, event: Outbound) -> str | None:
        """The user whose key seals `event`, or None when it goes unsealed."""
        if event.value.get("type") not in self._sealed_types.get(event.topic, ()):
            return None
        user = event.value.get("user_id")
        return user if isinstance(user, str) and user else None

    async def publish(self, events: Sequence[Outbound]) -> None:
        owners = {user for user in map(self._owner, events) if user is not None}
        found = await self._keys.data_keys_for_writing(owners) if owners else {}
        out: list[Outbound] = []
        for event in events:
            owner = self._owner(event)
            if owner is None:
                out.append(self._unowned(event))
                continue
            key = found.get(owner)
            if key is None and event.topic == self._dlq:
                out.append(self._unowned(event))  # a letter is never dropped, only emptied
                continue
            if key is None:
                log.debug("a %s of a forgotten user is not published", event.value.get("type"))
                continue
            envelope = SEALED_LETTER_TYPE if event.topic == self._dlq else SEALED_TYPE
            out.append(replace(event, value=seal(event.value, key, envelope)))
        if len(out) < len(events):
            log.info("%d records of forgotten users not published", len(events) - len(out))
        if out:
            await self._inner.publish(out)

    def _unowned(self, event: Outbound) -> Outbound:
        """A letter that cannot be sealed keeps no original bytes; anything else as it is."""
        if event.topic != self._dlq or event.value.get("type") not in SEALED_LETTER_TYPES:
            return event
        value: dict[str, Any] = {**event.value, "original_b64": "", "truncated": True}
        return replace(event, value=value)
