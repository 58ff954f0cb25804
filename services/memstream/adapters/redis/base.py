"""What every part of the Redis tree store shares: the client, the key names, the clock,
and the one way a user's writes go in (one transaction, guarded by its tombstone)."""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.exceptions import WatchError

from memstream.adapters.redis import keys
from memstream.adapters.redis.connection import RedisClient, SlotTransactions
from memstream.adapters.redis.errors import STORE_ERRORS, OnStoreError, StoreRefused, error_kind
from memstream.adapters.redis.knowledge_cache import DEFAULT_USERS, KnowledgeCache
from memstream.adapters.redis.node_cache import DEFAULT_MAX_BYTES, NodeDecodeCache
from memstream.adapters.redis.replicated import ReplicatedTransaction
from memstream.adapters.redis.slots import slot_of
from memstream.domain.forgetting import Guard, Tombstone

T = TypeVar("T")
log = logging.getLogger(__name__)

MARK_BITS = 21  # 32 bits of seconds (until 2106) + 21 = 53: exact in a double
MARK_MASK = (1 << MARK_BITS) - 1
SEEN_HORIZON = timedelta(days=8)  # the turns topic's 7 days of retention, plus one
SEEN_MAX = 200_000  # markers per user, whatever the rate: about 10 MB at most
PROBE_USER = "memstream-readiness-probe"  # read by the readiness probe, never written
SLOT_MOVES_FOLLOWED = 2  # a transaction redirected more often than this raises
# Failures after which a cluster's slot map is read again before the caller retries: the
# primary went away (a failover promotes its replica, elsewhere) or the cluster is mending.
NODE_LOST = frozenset({"connection", "timeout", "cluster_down", "try_again", "read_only"})


async def done(result: Awaitable[T] | T) -> T:
    """redis-py types its commands as sync-or-async; on the asyncio client they await."""
    return await result if inspect.isawaitable(result) else result


def text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


def tombstone_of(raw: bytes | str | None) -> Tombstone | None:
    return Tombstone.from_json(json.loads(raw)) if raw else None


class RedisBase:
    def __init__(
        self,
        client: RedisClient,
        namespace: str = keys.DEFAULT_NAMESPACE,
        *,
        seen_horizon: timedelta = SEEN_HORIZON,
        seen_max: int = SEEN_MAX,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        node_cache_size: int | None = None,
        node_cache_bytes: int = DEFAULT_MAX_BYTES,
        knowledge_cache_users: int = DEFAULT_USERS,
        cluster: bool = False,
        on_error: OnStoreError | None = None,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
    ) -> None:
        if cluster != isinstance(client, SlotTransactions):
            # The layout follows the client: a cluster's layout through a plain client (or
            # the reverse) would have every transaction refused.
            raise ValueError(
                "cluster mode and the client disagree: open the client with "
                f"connection.open_client(url, cluster={cluster})"
            )
        self._r = client
        # Nodes read again are not decoded again (see node_cache.py: a hit needs equal bytes).
        self.node_cache = NodeDecodeCache(node_cache_size, max_bytes=node_cache_bytes)
        # What reads derive of a user's knowledge, while its revision stays the same.
        self.knowledge_cache = KnowledgeCache(knowledge_cache_users)
        self._seen_horizon_s = int(seen_horizon.total_seconds())
        self._seen_max = seen_max
        self._clock = clock
        # A namespace lets deployments (or tests) share one Redis without seeing each other.
        self._ns = namespace
        # On a cluster the indexes across users are split by slot (`keys`, `slots`).
        self._cluster = cluster
        self._on_error = on_error
        # A commit returns once this many replicas hold it (`ReplicatedTransaction`).
        self._wait_replicas = wait_replicas
        self._wait_timeout_ms = wait_timeout_ms

    def _key(self, user_id: str, suffix: str) -> str:
        return keys.user_prefix(user_id, self._ns) + suffix

    def _user_slot(self, user_id: str) -> int | None:
        """The cluster slot of the user's keys; None on a single primary."""
        return slot_of(keys.user_prefix(user_id, self._ns)) if self._cluster else None

    def _across_users(self, index: Callable[[str, int | None], str], user_id: str) -> str:
        """The key of `index` (`keys.due`, ...) holding the user's entry."""
        return index(self._ns, self._user_slot(user_id))

    async def _each_slot(
        self,
        index: Callable[[str, int | None], str],
        command: str,
        *args: str | bytes | int | float,
    ) -> list[list[bytes]]:
        """On a cluster, the replies (those not empty) of `command <key> *args` on every
        slot's key of `index` (`SlotTransactions.ask_each_slot`); a slot that moved in the
        meantime makes the client learn the owners and ask again."""
        if not isinstance(self._r, SlotTransactions):
            raise TypeError("only a cluster's indexes are split by slot")
        for attempt in range(1, SLOT_MOVES_FOLLOWED + 2):
            try:
                key_of = partial(index, self._ns)
                return await self._r.ask_each_slot(index(self._ns, None), key_of, command, *args)
            except STORE_ERRORS as exc:
                kind = self._failed(exc)
                if kind in NODE_LOST:  # as for a transaction (`_in_slot_of`)
                    await _learn_slots_quietly(self._r)
                    raise
                if kind not in ("moved", "ask", "crossslot") or attempt > SLOT_MOVES_FOLLOWED:
                    raise
                await self._r.slots_moved()
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def ping(self) -> bool:
        """Whether Redis runs memstream's commands, not only PING: a read-only transaction
        shaped like a commit (a user's key and its entry in an index across users). A store
        that answers with an error (redirected, a transaction across slots refused, the
        cluster down) raises `StoreRefused`, its kind first; a lost connection raises too."""

        async def probe(client: aioredis.Redis) -> bool:
            pipe = client.pipeline(transaction=True)
            pipe.exists(self._key(PROBE_USER, keys.STATE))
            pipe.zscore(self._across_users(keys.due, PROBE_USER), PROBE_USER)
            await pipe.execute()
            return True

        try:
            return await self._in_slot_of(PROBE_USER, probe)
        except STORE_ERRORS as exc:
            raise StoreRefused(error_kind(exc), str(exc)) from exc

    def _failed(self, error: BaseException) -> str:
        """Count a failure by its kind (the store-errors metric), and name it."""
        kind = error_kind(error)
        if self._on_error is not None:
            self._on_error(kind)
        return kind

    def _replica_lag(self, acknowledged: int) -> None:
        log.warning(
            "a commit waits for its replicas: %d of %d acknowledged within %d ms",
            acknowledged,
            self._wait_replicas,
            self._wait_timeout_ms,
        )
        if self._on_error is not None:
            self._on_error("replica_lag")

    def _transaction(self, client: aioredis.Redis) -> Any:
        """A transaction pipeline on `client`: one that waits for the replicas when asked."""
        if self._wait_replicas == 0:
            return client.pipeline(transaction=True)
        return ReplicatedTransaction(
            client, self._wait_replicas, self._wait_timeout_ms, self._replica_lag
        )

    async def _client_for(self, user_id: str) -> aioredis.Redis:
        """The client a transaction of the user runs on: the one client on a single primary;
        on a cluster, a plain client of the primary that owns the user's slot."""
        if isinstance(self._r, SlotTransactions):
            return await self._r.primary_for(keys.user_prefix(user_id, self._ns))
        return self._r

    async def _in_slot_of(self, user_id: str, run: Callable[[aioredis.Redis], Awaitable[T]]) -> T:
        """`run` on the client of the user's slot. On a cluster, a redirect (the slot moved
        to another primary) makes the client learn the slots' owners and run it again; a
        failure is counted by kind, and raised."""
        cluster = self._r if isinstance(self._r, SlotTransactions) else None
        for attempt in range(1, SLOT_MOVES_FOLLOWED + 2):
            try:
                return await run(await self._client_for(user_id))
            except STORE_ERRORS as exc:
                kind = self._failed(exc)
                if cluster is not None and kind in NODE_LOST:
                    # Raised (an outage to the caller, which retries), but on the owners the
                    # cluster names now: the plain client of a dead primary is never re-read.
                    await _learn_slots_quietly(cluster)
                    raise
                redirected = kind in ("moved", "ask") and cluster is not None
                if cluster is None or not redirected or attempt > SLOT_MOVES_FOLLOWED:
                    raise
                await cluster.slots_moved()
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _commit(self, user_id: str, queue: Any, guard: Guard | None) -> bool:
        """Run `queue`'s writes in one transaction; with a guard, only while the user's
        tombstone is the guard's (WATCH: a forget landing before EXEC aborts it, and the
        check runs again, now seeing the forget)."""
        key = self._key(user_id, keys.TOMBSTONE)

        async def transaction(client: aioredis.Redis) -> bool:
            if guard is None:
                pipe = self._transaction(client)
                queue(pipe)
                await pipe.execute()
                return True
            async with self._transaction(client) as pipe:
                while True:
                    try:
                        await pipe.watch(key)
                        if not guard.allows(tombstone_of(await pipe.get(key))):
                            return False
                        pipe.multi()
                        queue(pipe)
                        await pipe.execute()
                        return True
                    except WatchError:
                        continue

        return await self._in_slot_of(user_id, transaction)


async def _learn_slots_quietly(cluster: SlotTransactions) -> None:
    """Read the slot map again; while no node answers, leave it as it was (the caller's retry
    reads it again)."""
    try:
        await cluster.slots_moved()
    except STORE_ERRORS as exc:
        log.info("the slot map could not be read again yet: %r", exc)
