"""Sealing turns in the producer: the option `AsyncMemstreamProducer(..., seal_turns=...)`.

Each `turn.v1` leaves the producer as a `sealed_turn.v1` (`contracts.sealed_turns`), sealed
for its user's turn key: a public key that the recall API hands out
(`GET /v1/users/{user_id}/turn-key`, `AsyncRecallClient.turn_key`) and that opens nothing.
Once the user is forgotten, no copy of its sealed turns on the turns topic can be read again
(docs/forget-everywhere.md). The other events (session ends, forgets, rebuilds) carry no
words and go as they are.

Keys are cached per user (`ttl_s`, at most `max_users`): one API call per user and TTL. A
key cached across a forget seals turns nobody can open; the segmenter drops them, as it
drops every turn of a forgotten user. A forgotten user's key is refused (`RecallError` with
status 409) and nothing of the event is sent.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from memstream.contracts.sealed_turns import SEALED_TURN_TYPES, seal_turn

DEFAULT_TTL_S = 300.0
DEFAULT_MAX_USERS = 10_000


class TurnKeySource(Protocol):
    async def turn_key(self, user_id: str) -> bytes:
        """The user's turn key (32 bytes); `AsyncRecallClient` is one."""
        ...


class TurnSealer:
    """Seals the values that carry words, with a cache of the users' turn keys."""

    def __init__(
        self,
        source: TurnKeySource,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        max_users: int = DEFAULT_MAX_USERS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._source = source
        self._ttl_s = ttl_s
        self._max_users = max_users
        self._clock = clock
        self._keys: OrderedDict[str, tuple[float, bytes]] = OrderedDict()

    async def sealed(self, value: Mapping[str, Any]) -> Mapping[str, Any]:
        """`value` sealed if it is a turn, else as it is."""
        if value.get("type") not in SEALED_TURN_TYPES:
            return value
        return seal_turn(value, await self._key(str(value["user_id"])))

    async def _key(self, user_id: str) -> bytes:
        now = self._clock()
        cached = self._keys.get(user_id)
        if cached is not None and now - cached[0] < self._ttl_s:
            self._keys.move_to_end(user_id)
            return cached[1]
        key = await self._source.turn_key(user_id)
        self._keys[user_id] = (now, key)
        self._keys.move_to_end(user_id)
        while len(self._keys) > self._max_users:
            self._keys.popitem(last=False)
        return key
