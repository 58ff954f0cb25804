"""Turn keys for producers that seal (`GET /v1/users/{user_id}/turn-key`).

A producer that seals a user's turns (`contracts.sealed_turns`) asks for the public half of
the user's turn key pair. It is derived from the user's data key, which is made here if the
user has none yet, as the user's first sealed write would make it; a forgotten user (its
tombstone stands) gets none, so nothing of it is sealed, or sent, again until the tombstone
lapses. The public key opens nothing: handing it out gives a producer no access to the user.
"""

from __future__ import annotations

from memstream.contracts.sealed_turns import turn_public_key
from memstream.ports import DataKeys


class TurnKeys:
    def __init__(self, keys: DataKeys) -> None:
        self._keys = keys

    async def public_key(self, user_id: str) -> bytes | None:
        """The user's turn key (32 bytes), its data key made if absent; None if forgotten."""
        found = await self._keys.data_keys_for_writing({user_id})
        data_key = found.get(user_id)
        return None if data_key is None else turn_public_key(data_key)
