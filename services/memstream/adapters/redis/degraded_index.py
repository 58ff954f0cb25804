"""Each user's own degraded index (`keys.DEGRADED`) filled, once, from the markers an older
version wrote only to the set of all users (`keys.degraded`).

Commits write both sets in one transaction; markers from before the user's index existed are
in the set of all users alone, so the user's overview would not count them. The clock's first
run copies them (`ClockTicker.run_once`): each user's markers in one script on the user's
slot, which copies a marker only while it is still in the set of all users and its node still
exists, so a commit or a forget that ran in the meantime is never undone. Then
`keys.degraded_by_user` is set and no later run reads the set of all users for this again.
Running it twice, or from two clocks at once, copies nothing twice (the sets ignore repeats).
A marker an older worker writes after that run (workers upgraded one at a time) is left out of
the overview's count until its node's next write; a forget still removes it (by node id).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence

import redis.asyncio as aioredis

from memstream.adapters.redis import keys
from memstream.adapters.redis.base import RedisBase, done

# KEYS: the set of all users' markers (its part in the user's slot), the user's own index,
# then each marker's node. ARGV: each marker, then its node id, in the order of its node.
_COPY_LIVE_MARKERS = """
local copied = 0
for i = 3, #KEYS do
  local marker, node_id = ARGV[2 * (i - 2) - 1], ARGV[2 * (i - 2)]
  if redis.call('SISMEMBER', KEYS[1], marker) == 1 and redis.call('EXISTS', KEYS[i]) == 1 then
    copied = copied + redis.call('SADD', KEYS[2], node_id)
  end
end
return copied
"""

# Markers copied by one script: a user with many stays within a bounded command.
CHUNK = 500


class RedisDegradedIndex(RedisBase):
    async def index_degraded_by_user(self) -> int:
        """Copy the markers older versions wrote into each user's own index, unless it was
        done before; returns how many node ids were added."""
        done_key = keys.degraded_by_user(self._ns)
        if await self._r.exists(done_key):
            return 0
        if self._cluster:
            parts = await self._each_slot(keys.degraded, "SMEMBERS")
            members = [m for part in parts for m in part]
        else:
            members = list(await done(self._r.smembers(keys.degraded(self._ns))))
        by_user: dict[str, dict[bytes | str, str]] = {}
        for member in members:
            user_id, node_id = keys.decode_member(member)
            by_user.setdefault(user_id, {})[member] = node_id
        copied = 0
        for user_id, markers in by_user.items():
            pairs = list(markers.items())
            for start in range(0, len(pairs), CHUNK):
                chunk = pairs[start : start + CHUNK]
                copied += await self._in_slot_of(user_id, self._copier(user_id, chunk))
        await self._r.set(done_key, str(int(time.time())))
        return copied

    def _copier(
        self, user_id: str, markers: Sequence[tuple[bytes | str, str]]
    ) -> Callable[[aioredis.Redis], Awaitable[int]]:
        """The script's run for some of one user's markers, on the client of its slot."""
        names = [
            self._across_users(keys.degraded, user_id),
            self._key(user_id, keys.DEGRADED),
            *(self._key(user_id, keys.node(node_id)) for _, node_id in markers),
        ]
        args = [value for pair in markers for value in pair]

        async def copy(client: aioredis.Redis) -> int:
            reply = await done(client.eval(_COPY_LIVE_MARKERS, len(names), *names, *args))
            return int(reply)

        return copy
