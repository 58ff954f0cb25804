"""`ports.OverflowLedger` and `ports.OverflowReads` in Redis: per user, a hash of the
turns-log places ("partition:offset") of its records waiting in the overflow topic; and
`ports.OverflowQueues`: one hash of each tenant's overflow partition.

Each user's hash is in the user's slot (`{user_id}`), so every write is one command on one
key, atomic on Redis Cluster too. Entries are idempotent: a batch replayed after a crash
writes the same fields again, and striking off a record handled twice is a no-op. A forget
leaves the hash alone: the overflow strikes off its own entries as it drops what predates
the forget, and a later turn must still queue behind them (`domain.fair_share`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from memstream.adapters.redis import keys
from memstream.adapters.redis.base import RedisBase, done, text
from memstream.domain.fair_share import parse_position, position_field, queue_for


class RedisOverflow(RedisBase):
    async def held(self, user_ids: Collection[str]) -> set[str]:
        wanted = sorted(set(user_ids))
        if not wanted:
            return set()
        pipe = self._r.pipeline(transaction=False)
        for user_id in wanted:
            pipe.exists(self._key(user_id, keys.OVERFLOW))
        replies = await pipe.execute()
        return {u for u, found in zip(wanted, replies, strict=True) if found}

    async def divert(self, positions: Mapping[str, Sequence[tuple[int, int]]]) -> None:
        await self._each_user(positions, strike=False)

    async def release(self, positions: Mapping[str, Sequence[tuple[int, int]]]) -> None:
        await self._each_user(positions, strike=True)

    async def overflow_queues(self, tenants: Collection[str], partitions: int) -> dict[str, int]:
        key = keys.overflow_queues(self._ns)
        found = await done(self._r.hgetall(key))
        taken = {text(tenant): int(queue) for tenant, queue in found.items()}
        for tenant in sorted(set(tenants) - taken.keys()):
            queue = queue_for(taken, partitions)
            # HSETNX: of two workers choosing at once, the first one's choice stands.
            await done(self._r.hsetnx(key, tenant, str(queue)))
            chosen = await done(self._r.hget(key, tenant))
            taken[tenant] = queue if chosen is None else int(chosen)
        return {tenant: taken[tenant] for tenant in tenants}

    async def diverted(self, user_id: str) -> list[tuple[int, int]]:
        fields = await done(self._r.hkeys(self._key(user_id, keys.OVERFLOW)))
        return [parse_position(text(f)) for f in fields]

    async def _each_user(
        self, positions: Mapping[str, Sequence[tuple[int, int]]], *, strike: bool
    ) -> None:
        pipe = self._r.pipeline(transaction=False)
        for user_id, places in positions.items():
            if not places:
                continue
            key = self._key(user_id, keys.OVERFLOW)
            fields = [position_field(p, o) for p, o in places]
            if strike:
                pipe.hdel(key, *fields)
            else:
                pipe.hset(key, mapping=dict.fromkeys(fields, 1))
        if len(pipe):
            await pipe.execute()
