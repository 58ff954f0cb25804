"""The users' data keys in Redis (`ms:{u}:datakey`): what the sealing publisher seals a
user's words under, and what the API opens them with (`contracts.sealed`).

A key is made by the user's first write that seals (its first point indexed, before its
first commit), by a script that makes one only for a user without a tombstone. Scripts run
atomically, and a forget deletes the key and writes the tombstone in one transaction, so
work that outlives a forget never gets a fresh key: it finds none, and writes nothing of the
user. A user that comes back after the tombstone (new turns, appended after the forget) gets
a new key; the old copies stay unreadable. A dead letter about a valid user id makes one
too, as a first turn would (only ids a user can have: `edges/faust/dead_letters.py`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Collection

import redis.asyncio as aioredis

from memstream.adapters.redis import keys
from memstream.adapters.redis.base import RedisBase, done
from memstream.contracts.sealed import KEY_BYTES, new_data_key

# KEYS: datakey, tombstone; ARGV: a new key, used only when none is there.
_KEY_FOR_WRITING = """
local key = redis.call('GET', KEYS[1])
if key then return key end
if redis.call('EXISTS', KEYS[2]) == 1 then return false end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
"""


class RedisDataKeys(RedisBase):
    """`ports.DataKeys`."""

    async def data_keys_for_writing(self, user_ids: Collection[str]) -> dict[str, bytes | None]:
        """Each user's data key, made now for a user without a tombstone that has none;
        None for a forgotten user. One round trip when every key exists (the usual case),
        then the script for those that do not."""
        found = await self.data_keys(user_ids)
        missing = [user for user, key in found.items() if key is None]
        if not missing:
            return found
        made = {
            user_id: await self._in_slot_of(user_id, self._key_maker(user_id))
            for user_id in missing
        }
        return {**found, **made}

    def _key_maker(self, user_id: str) -> Callable[[aioredis.Redis], Awaitable[bytes | None]]:
        """The script's run for one user, on the client of the user's slot (a cluster's
        primary, or the single one): its two keys share the user's hash tag."""
        p = keys.user_prefix(user_id, self._ns)

        async def make(client: aioredis.Redis) -> bytes | None:
            reply = await done(
                client.eval(
                    _KEY_FOR_WRITING,
                    2,
                    p + keys.DATAKEY,
                    p + keys.TOMBSTONE,
                    base64.b64encode(new_data_key()),
                )
            )
            return _key_bytes(reply)

        return make

    async def open_data_key(self, user_id: str) -> None:
        """Make the user's key if it has none, whatever its tombstone says (an import)."""
        await self._r.set(
            self._key(user_id, keys.DATAKEY), base64.b64encode(new_data_key()), nx=True
        )

    async def data_keys(self, user_ids: Collection[str]) -> dict[str, bytes | None]:
        """Each user's data key as it is (None: never made, or forgotten); makes none."""
        wanted = sorted(set(user_ids))
        pipe = self._r.pipeline(transaction=False)
        for user_id in wanted:
            pipe.get(self._key(user_id, keys.DATAKEY))
        replies = await pipe.execute() if wanted else []
        return {u: _key_bytes(r) for u, r in zip(wanted, replies, strict=True)}


def _key_bytes(reply: object) -> bytes | None:
    """The key a reply holds (stored as base64 text: readable by any client, binary or
    decoding); None for no key, or a value that is not one (nothing can open with it)."""
    if not isinstance(reply, bytes | str) or not reply:
        return None
    try:
        key = base64.b64decode(reply, validate=True)
    except (binascii.Error, ValueError):
        return None
    return key if len(key) == KEY_BYTES else None
