"""The tree's structure and the workers' state in Redis.

Every per-user key carries the `{user_id}` hash tag, so one user's keys live in one Redis
Cluster slot and a user's whole write is one MULTI/EXEC transaction. Layout, with the
default namespace `ms` (MEMSTREAM_REDIS_NAMESPACE):

    ms:{u}:state            JSON of the window reducer's state
    ms:{u}:seen             sorted set of processed event ids (idempotency markers, below)
    ms:{u}:outbox           list of JSON events the segmenter committed but has not published
    ms:{u}:outbox:consolidator  the same, for the consolidator
    ms:{u}:node:<id>        JSON of a memory node (text included: recall climbs the tree here)
    ms:{u}:children:<id>    set of child ids of a node (filled before the node itself exists)
    ms:{u}:level:<n>        sorted set of node ids by t_end (epoch seconds)
    ms:{u}:keys             set of the user's other key suffixes (node:<id>, children:<id>),
                            added in the transaction that creates each: what a forget deletes
    ms:{u}:sources          hash: message (event) id -> id of the L1 holding it, written and
                            removed with the L1s, so a message forget finds its L1 directly
                            (the field "" marks it complete: L1s older than it indexed too)
    ms:{u}:expiry           sorted set: message id -> its deadline (epoch s), `domain.expiry`
    ms:{u}:tombstone        JSON of the user's tombstone after a forget (expires; see
                            `domain.forgetting`); commits with a guard check it atomically
    ms:{u}:rebuild          JSON of the user's latest rebuild job (`domain.rebuild`)
    ms:due                  sorted set: user -> earliest wall-clock time a tick may close something
    ms:rebuilds             sorted set: user -> when its rebuild may take its next chunk (+inf:
                            its leaves are done, its windows not yet seen consolidated)
    ms:degraded             set of JSON ["user", "node id"] written by the offline fallback

`RedisTree` implements `memstream.ports.TreeStore`.

Idempotency markers are bounded per user by a replay horizon. A record can only be delivered
again while its topic retains it: seven days for the turns topic, counted from when the
broker appended it, not from the turn's own date (a replayed 2023 conversation is appended
today). So a marker is scored by when it was committed and dropped `seen_horizon` later
(retention plus a day of margin for a consumer that falls behind), and at most `seen_max`
are kept per user whatever the rate. Each score packs the commit time in whole seconds (high
bits) with a 21-bit mark of the event's content (low bits), so one sorted set answers both
"seen?" and "seen with the same content?", and trims by time with one range command.
"""

from __future__ import annotations

import inspect
import json
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import redis.asyncio as aioredis
import redis.exceptions
from redis.exceptions import WatchError

from memstream.adapters.redis.node_cache import DEFAULT_MAX_BYTES, NodeDecodeCache
from memstream.contracts.codec import decode_node, encode_node
from memstream.domain.forgetting import Forgotten, Guard, Tombstone
from memstream.domain.models import Level, MemoryNode, StoredNode
from memstream.domain.rebuild import RebuildJob
from memstream.ports import OutboxName

T = TypeVar("T")

DEFAULT_NAMESPACE = "ms"
MARK_BITS = 21  # 32 bits of seconds (until 2106) + 21 = 53: exact in a double
MARK_MASK = (1 << MARK_BITS) - 1
SEEN_HORIZON = timedelta(days=8)  # the turns topic's 7 days of retention, plus one
SEEN_MAX = 200_000  # markers per user, whatever the rate: about 10 MB at most


async def _done(result: Awaitable[T] | T) -> T:
    """redis-py types its commands as sync-or-async; on the asyncio client they await."""
    return await result if inspect.isawaitable(result) else result


def _line_up(node_ids: Sequence[str], found: Mapping[str, MemoryNode]) -> list[MemoryNode]:
    """The found nodes among `node_ids`, in that order, then their found ancestors."""
    line = {i: found[i] for i in node_ids if i in found}
    for node in list(line.values()):
        while (parent := node.parent_id) is not None and parent in found and parent not in line:
            node = line[parent] = found[parent]
    return list(line.values())


def user_prefix(user_id: str, namespace: str = DEFAULT_NAMESPACE) -> str:
    return f"{namespace}:{{{user_id}}}:"


class RedisTree:
    """Tree links, time indexes, window state, idempotency markers and outboxes."""

    def __init__(
        self,
        client: aioredis.Redis,
        namespace: str = DEFAULT_NAMESPACE,
        *,
        seen_horizon: timedelta = SEEN_HORIZON,
        seen_max: int = SEEN_MAX,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        node_cache_size: int | None = None,
        node_cache_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self._r = client
        # Nodes read again are not decoded again (see node_cache.py: a hit needs equal bytes).
        self.node_cache = NodeDecodeCache(node_cache_size, max_bytes=node_cache_bytes)
        self._seen_horizon_s = int(seen_horizon.total_seconds())
        self._seen_max = seen_max
        self._clock = clock
        # A namespace lets deployments (or tests) share one Redis without seeing each other.
        self._ns = namespace
        self._due = f"{namespace}:due"
        self._degraded = f"{namespace}:degraded"
        self._rebuilds = f"{namespace}:rebuilds"

    def _key(self, user_id: str, suffix: str) -> str:
        return user_prefix(user_id, self._ns) + suffix

    async def ping(self) -> bool:
        return bool(await _done(self._r.ping()))

    # --- segmenter state -------------------------------------------------------------------

    async def load_state(self, user_id: str) -> dict[str, Any] | None:
        raw = await self._r.get(self._key(user_id, "state"))
        return json.loads(raw) if raw else None

    async def unseen(self, user_id: str, event_ids: Sequence[str]) -> list[bool]:
        """For each event id, whether it has not been processed yet (within the horizon)."""
        return [mark is None for mark in await self.seen_marks(user_id, event_ids)]

    async def seen_marks(self, user_id: str, event_ids: Sequence[str]) -> list[int | None]:
        """For each event id, the content mark it was committed with; None if not seen."""
        if not event_ids:
            return []
        key = self._key(user_id, "seen")
        try:
            scores = await _done(self._r.zmscore(key, list(event_ids)))
        except redis.exceptions.ResponseError as error:
            if "WRONGTYPE" not in str(error):
                raise
            await self._upgrade_seen_set(key)
            scores = await _done(self._r.zmscore(key, list(event_ids)))
        return [None if s is None else int(s) & MARK_MASK for s in scores]

    async def _upgrade_seen_set(self, key: str) -> None:
        """Markers an older version kept as a plain set become sorted-set markers, committed
        now with no content mark (they then expire with the horizon like any other)."""
        members = await _done(self._r.smembers(key))
        stamp = float(int(self._clock().timestamp()) << MARK_BITS)
        pipe = self._r.pipeline(transaction=True)
        pipe.delete(key)
        if members:
            pipe.zadd(key, dict.fromkeys(members, stamp))
        await pipe.execute()

    async def commit_user(
        self,
        user_id: str,
        *,
        state: dict[str, Any],
        seen: Mapping[str, int] | Iterable[str],
        nodes: Sequence[MemoryNode],
        outbox: Sequence[dict[str, Any]],
        due: datetime | None,
        guard: Guard | None = None,
        removed: Sequence[MemoryNode] = (),
        forgotten: Sequence[str] = (),
        expiring: Mapping[str, datetime] | None = None,
        rebuild: RebuildJob | None = None,
    ) -> bool:
        """Write one user's new state, nodes, markers and outgoing events atomically."""
        p = user_prefix(user_id, self._ns)
        marks = dict(seen) if isinstance(seen, Mapping) else dict.fromkeys(seen, 0)

        def queue(pipe: Any) -> None:
            pipe.set(p + "state", json.dumps(state))
            if marks:
                now = int(self._clock().timestamp())
                stamp = now << MARK_BITS
                pipe.zadd(p + "seen", {e: float(stamp | (m & MARK_MASK)) for e, m in marks.items()})
                expired = (now - self._seen_horizon_s) << MARK_BITS
                pipe.zremrangebyscore(p + "seen", "-inf", f"({expired}")
                pipe.zremrangebyrank(p + "seen", 0, -(self._seen_max + 1))
            self._queue_nodes(pipe, user_id, [(node, "") for node in nodes])
            for node in removed:
                self._queue_removal(pipe, node)
            if forgotten:
                # Scored by when: pruned past the seen markers' horizon, which outlasts the
                # turns topic's retention, so no replay can bring the message back.
                now_s = self._clock().timestamp()
                pipe.zadd(p + "forgotten", dict.fromkeys(forgotten, now_s))
                pipe.zremrangebyscore(p + "forgotten", "-inf", f"({now_s - self._seen_horizon_s}")
                pipe.zrem(p + "expiry", *forgotten)
                pipe.hdel(p + "sources", *forgotten)  # a rewritten L1 no longer holds them
            if expiring:
                pipe.zadd(p + "expiry", {e: at.timestamp() for e, at in expiring.items()})
            if outbox:
                pipe.rpush(p + _OUTBOX_KEYS["segmenter"], *(json.dumps(e) for e in outbox))
            if rebuild is not None:
                pipe.set(p + "rebuild", json.dumps(rebuild.to_json()))
                # Unfinished: due now (the scheduler paces it); finished: listed until settled.
                score = float("inf") if rebuild.finished else self._clock().timestamp()
                pipe.zadd(self._rebuilds, {user_id: score})
            if due is None:
                pipe.zrem(self._due, user_id)
            else:
                pipe.zadd(self._due, {user_id: due.timestamp()})

        return await self._commit(user_id, queue, guard)

    async def forgotten_messages(self, user_id: str, event_ids: Sequence[str]) -> list[bool]:
        if not event_ids:
            return []
        scores = await _done(self._r.zmscore(self._key(user_id, "forgotten"), list(event_ids)))
        return [s is not None for s in scores]

    async def leaves_citing(self, user_id: str, message_ids: Sequence[str]) -> list[str]:
        if not message_ids:
            return []
        p = user_prefix(user_id, self._ns)
        *held, complete = await _done(
            self._r.hmget(p + "sources", [*message_ids, _SOURCES_COMPLETE])
        )
        if complete is None:  # L1s written before the index existed may be missing from it
            await self._index_sources(user_id)
            held = await _done(self._r.hmget(p + "sources", list(message_ids)))
        return sorted({_text(h) for h in held if h is not None})

    async def _index_sources(self, user_id: str, page: int = 500) -> None:
        """Index the messages of every L1 of the user, then mark the index complete: once
        per user, on its first message forget (L1s written since are indexed as they are
        written). Called by the segmenter, the one writer of a user's L1s, so nothing
        changes them meanwhile."""
        p = user_prefix(user_id, self._ns)
        offset = 0
        while ids := await self.level_ids(user_id, Level.SEGMENT, offset=offset, limit=page):
            offset += len(ids)
            mapping = {m: n.id for n in await self.get_many(user_id, ids) for m in n.source_ids}
            if mapping:
                await _done(self._r.hset(p + "sources", mapping=mapping))
        await _done(self._r.hset(p + "sources", _SOURCES_COMPLETE, "1"))

    async def expiries(self, user_id: str, limit: int = 100) -> list[tuple[str, float]]:
        raw = await self._r.zrange(self._key(user_id, "expiry"), 0, limit - 1, withscores=True)
        return [(_text(member), float(score)) for member, score in raw]

    async def _commit(self, user_id: str, queue: Any, guard: Guard | None) -> bool:
        """Run `queue`'s writes in one transaction; with a guard, only while the user's
        tombstone is the guard's (WATCH: a forget landing before EXEC aborts it, and the
        check runs again, now seeing the forget)."""
        if guard is None:
            pipe = self._r.pipeline(transaction=True)
            queue(pipe)
            await pipe.execute()
            return True
        key = self._key(user_id, "tombstone")
        async with self._r.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(key)
                    if not guard.allows(_tombstone(await pipe.get(key))):
                        return False
                    pipe.multi()
                    queue(pipe)
                    await pipe.execute()
                    return True
                except WatchError:
                    continue

    async def rebuild_job(self, user_id: str) -> RebuildJob | None:
        raw = await self._r.get(self._key(user_id, "rebuild"))
        return RebuildJob.from_json(json.loads(raw)) if raw else None

    async def rebuilds_due(self, now: float, limit: int) -> list[str]:
        raw = await self._r.zrangebyscore(self._rebuilds, "-inf", now, start=0, num=limit)
        return [_text(r) for r in raw]

    async def lease_rebuild(self, user_id: str, until: float) -> None:
        await self._r.zadd(self._rebuilds, {user_id: until}, xx=True)

    async def rebuilding_users(self, limit: int = 10_000) -> list[str]:
        return [_text(r) for r in await self._r.zrange(self._rebuilds, 0, limit - 1)]

    async def settle_rebuild(self, user_id: str, rebuild_id: str | None) -> bool:
        key = self._key(user_id, "rebuild")
        async with self._r.pipeline(transaction=True) as pipe:
            try:
                await pipe.watch(key)  # a new job committed before EXEC aborts the settling
                raw = await pipe.get(key)
                job = RebuildJob.from_json(json.loads(raw)) if raw else None
                if job is not None and (job.rebuild_id != rebuild_id or not job.finished):
                    return False
                pipe.multi()
                pipe.zrem(self._rebuilds, user_id)
                await pipe.execute()
                return True
            except WatchError:
                return False

    async def all_users(self, page: int = 1000) -> list[str]:
        """Every user with a window state, sorted: what `memstream rebuild --all` rebuilds.
        (A SCAN of the keyspace: an operator's command, never on a per-user path.)"""
        prefix, suffix = f"{self._ns}:{{", "}:state"
        users = {
            _text(key)[len(prefix) : -len(suffix)]
            async for key in self._r.scan_iter(match=f"{prefix}*{suffix}", count=page)
        }
        return sorted(users)

    async def outbox(self, user_id: str, name: OutboxName) -> list[dict[str, Any]]:
        raw = await _done(self._r.lrange(self._key(user_id, _OUTBOX_KEYS[name]), 0, -1))
        return [json.loads(r) for r in raw]

    async def clear_outbox(self, user_id: str, count: int, name: OutboxName) -> None:
        if count > 0:
            await _done(self._r.ltrim(self._key(user_id, _OUTBOX_KEYS[name]), count, -1))

    async def due_users(self, now: datetime, limit: int = 10_000) -> list[str]:
        raw = await self._r.zrangebyscore(self._due, "-inf", now.timestamp(), start=0, num=limit)
        return [r.decode() if isinstance(r, bytes) else r for r in raw]

    # --- nodes -----------------------------------------------------------------------------

    async def commit_nodes(
        self,
        user_id: str,
        nodes: Sequence[StoredNode],
        outbox: Sequence[dict[str, Any]],
        guard: Guard | None = None,
        removed: Sequence[MemoryNode] = (),
    ) -> bool:
        """Nodes with their fingerprints and the consolidator's outgoing events, atomically."""
        for stored in nodes:
            if stored.node.user_id != user_id:
                raise ValueError(f"node {stored.node.id} belongs to another user")

        def queue(pipe: Any) -> None:
            self._queue_nodes(pipe, user_id, [(s.node, s.fingerprint) for s in nodes])
            for stored in nodes:
                marker = _degraded_member(user_id, stored.node.id)
                if stored.node.degraded:
                    pipe.sadd(self._degraded, marker)
                else:
                    pipe.srem(self._degraded, marker, _legacy_member(user_id, stored.node.id))
            for node in removed:
                self._queue_removal(pipe, node)
            if outbox:
                pipe.rpush(
                    self._key(user_id, _OUTBOX_KEYS["consolidator"]),
                    *(json.dumps(e) for e in outbox),
                )

        return await self._commit(user_id, queue, guard)

    async def save_node(self, node: MemoryNode, fingerprint: str) -> None:
        """One node, no event (for tools and tests that build a tree directly)."""
        await self.commit_nodes(node.user_id, [StoredNode(node, fingerprint)], outbox=[])

    def _queue_nodes(
        self, pipe: Any, user_id: str, nodes: Sequence[tuple[MemoryNode, str]]
    ) -> None:
        """One user's nodes (with their fingerprints), their links and indexes, in a few
        commands whatever their number: packing and answering each command costs the event
        loop more than Redis spends on it, and a step writes an L1 per exchange. (Within the
        transaction the order does not matter; a later node of the same id wins, as it did
        with a command per node.)"""
        if not nodes:
            return
        p = user_prefix(user_id, self._ns)
        docs: dict[str, str] = {}
        levels: dict[int, dict[str, float]] = {}
        children: dict[str, list[str]] = {}
        registered: dict[str, None] = {}
        sources: dict[str, str] = {}
        for node, fingerprint in nodes:
            if node.user_id != user_id:  # its keys would be another user's (another slot)
                raise ValueError(f"node {node.id} belongs to another user")
            doc = encode_node(node) | {"fingerprint": fingerprint}
            docs[p + f"node:{node.id}"] = json.dumps(doc)
            levels.setdefault(int(node.level), {})[node.id] = node.t_end.timestamp()
            registered[f"node:{node.id}"] = None
            if node.parent_id:
                children.setdefault(node.parent_id, []).append(node.id)
                registered[f"children:{node.parent_id}"] = None
            if node.level == Level.SEGMENT:
                sources.update(dict.fromkeys(node.source_ids, node.id))
        pipe.mset(docs)
        for level, scores in levels.items():
            pipe.zadd(p + f"level:{level}", scores)
        for parent_id, ids in children.items():
            pipe.sadd(p + f"children:{parent_id}", *ids)
        pipe.sadd(p + "keys", *registered)
        if sources:
            pipe.hset(p + "sources", mapping=sources)

    def _queue_removal(self, pipe: Any, node: MemoryNode) -> None:
        """A node and every link to it go: its key, its place in its level and its parent."""
        p = user_prefix(node.user_id, self._ns)
        pipe.delete(p + f"node:{node.id}", p + f"children:{node.id}")
        pipe.zrem(p + f"level:{int(node.level)}", node.id)
        if node.parent_id:
            pipe.srem(p + f"children:{node.parent_id}", node.id)
        pipe.srem(p + "keys", f"node:{node.id}", f"children:{node.id}")
        if node.level == Level.SEGMENT and node.source_ids:
            pipe.hdel(p + "sources", *node.source_ids)
        member = _degraded_member(node.user_id, node.id)
        pipe.srem(self._degraded, member, _legacy_member(node.user_id, node.id))

    async def get(self, user_id: str, node_id: str) -> StoredNode | None:
        raw = await self._r.get(self._key(user_id, f"node:{node_id}"))
        if raw is None:
            return None
        doc = json.loads(raw)
        return StoredNode(decode_node(doc), doc.get("fingerprint", ""))

    async def get_many(self, user_id: str, node_ids: Sequence[str]) -> list[MemoryNode]:
        """The nodes that exist among `node_ids`, in the given order."""
        if not node_ids:
            return []
        p = user_prefix(user_id, self._ns)
        keys = [p + f"node:{i}" for i in node_ids]
        raws = await self._r.mget(keys)
        decode = self.node_cache.decode
        return [decode(r, k) for k, r in zip(keys, raws, strict=True) if r is not None]

    async def get_with_ancestors(self, user_id: str, node_ids: Sequence[str]) -> list[MemoryNode]:
        """The nodes among `node_ids` and all their ancestors, read in one MGET when this
        process has read them before.

        Recall climbs from the leaves' sessions to the profile, one level a round trip (four
        MGETs). The decoded-node cache remembers each ancestor's parent from an earlier read,
        so the ancestors are guessed and read in the same MGET as the nodes asked for. A guess
        only picks keys: every node returned is decoded from bytes read by this call, and an
        ancestor the guess missed (a new or moved parent) is read by another MGET.
        """
        p = user_prefix(user_id, self._ns)
        found: dict[str, MemoryNode] = {}
        asked: set[str] = set()
        line: list[MemoryNode] = []
        pending = list(dict.fromkeys(node_ids))
        while pending:
            wanted = dict.fromkeys(pending)
            for node_id in pending:
                guess = self.node_cache.peek(p + f"node:{node_id}")
                # Each step adds a new id, so even a cycle of stale parents ends.
                while guess is not None and guess.parent_id and guess.parent_id not in wanted:
                    if guess.parent_id in asked:
                        break
                    wanted[guess.parent_id] = None
                    guess = self.node_cache.peek(p + f"node:{guess.parent_id}")
            asked.update(wanted)
            for node in await self.get_many(user_id, list(wanted)):
                found.setdefault(node.id, node)
            line = _line_up(node_ids, found)  # a wrong guess read a node that is not on it
            pending = list(
                dict.fromkeys(n.parent_id for n in line if n.parent_id and n.parent_id not in asked)
            )
        return line

    async def children_ids(self, user_id: str, node_id: str) -> list[str]:
        raw = await _done(self._r.smembers(self._key(user_id, f"children:{node_id}")))
        return sorted(r.decode() if isinstance(r, bytes) else r for r in raw)

    async def recent(
        self, user_id: str, level: Level, count: int, before: datetime | None = None
    ) -> list[MemoryNode]:
        """The `count` newest nodes of a level ending before `before`, oldest first."""
        if count <= 0:
            return []
        top = f"({before.timestamp()}" if before else "+inf"
        ids = await self._r.zrevrangebyscore(
            self._key(user_id, f"level:{int(level)}"), top, "-inf", start=0, num=count
        )
        ids = [i.decode() if isinstance(i, bytes) else i for i in ids]
        return list(reversed(await self.get_many(user_id, ids)))

    async def level_ids(
        self,
        user_id: str,
        level: Level,
        start: float = float("-inf"),
        end: float = float("inf"),
        offset: int = 0,
        limit: int = 100,
    ) -> list[str]:
        ids = await self._r.zrangebyscore(
            self._key(user_id, f"level:{int(level)}"), start, end, start=offset, num=limit
        )
        return [i.decode() if isinstance(i, bytes) else i for i in ids]

    async def count(self, user_id: str, level: Level) -> int:
        return int(await self._r.zcard(self._key(user_id, f"level:{int(level)}")))

    async def profile(self, user_id: str) -> MemoryNode | None:
        # By end, not by last write: a late month consolidated again is not the newest one.
        newest = await self.recent(user_id, Level.MONTH, 1)
        return newest[0] if newest else None

    async def open_window_counts(
        self, *, max_users: int = 100_000, chunk: int = 500
    ) -> Counter[int]:
        """Open windows per level, over every user with something open.

        A user with an open window always has an entry in the due index (an open session or
        calendar window always has a time the clock may close it), so that index lists whom
        to read; their states are fetched in pipelined chunks.
        """
        users = await self.due_users(datetime.max.replace(tzinfo=UTC), limit=max_users)
        counts: Counter[int] = Counter()
        for start in range(0, len(users), chunk):
            pipe = self._r.pipeline(transaction=False)
            for user in users[start : start + chunk]:
                pipe.get(self._key(user, "state"))
            for raw in await pipe.execute():
                if raw:
                    for window in json.loads(raw).get("open_windows", {}).values():
                        counts[int(window["level"])] += 1
        return counts

    async def degraded(self, limit: int = 1000) -> list[tuple[str, str]]:
        raw = await _done(self._r.srandmember(self._degraded, limit))
        return [_decode_member(r) for r in raw or []]

    # --- forgetting ------------------------------------------------------------------------

    async def delete_user(self, user_id: str) -> int:
        """Remove every key of the user; returns how many keys were deleted."""
        return (await self._remove(user_id, None, None)).redis_keys

    async def forget(self, user_id: str, tombstone: Tombstone, ttl_s: int | None) -> Forgotten:
        """Every key of the user goes and the tombstone is written, in one transaction."""
        return await self._remove(user_id, tombstone, ttl_s)

    async def tombstone(self, user_id: str) -> Tombstone | None:
        return _tombstone(await self._r.get(self._key(user_id, "tombstone")))

    async def _remove(
        self, user_id: str, tombstone: Tombstone | None, ttl_s: int | None
    ) -> Forgotten:
        """The user's keys are its fixed ones, the registered ones and, for nodes written
        before the registry, those its level indexes name: found without a keyspace SCAN,
        so a glob character in an id cannot reach another user. WATCH on the registry: a
        commit that creates a key between the reading and the delete makes it read again."""
        p = user_prefix(user_id, self._ns)
        levels = [p + f"level:{int(level)}" for level in Level]
        async with self._r.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(p + "keys", *levels)
                    suffixes = {_text(k) for k in await _done(pipe.smembers(p + "keys"))}
                    node_ids: set[str] = set()
                    for level_key in levels:
                        node_ids.update(_text(i) for i in await pipe.zrange(level_key, 0, -1))
                    suffixes.update(f"node:{i}" for i in node_ids)
                    suffixes.update(f"children:{i}" for i in node_ids)
                    keys = [p + k for k in (*_FIXED_SUFFIXES, *suffixes)] + levels
                    pipe.multi()
                    pipe.delete(*keys)
                    pipe.zrem(self._due, user_id)
                    pipe.zrem(self._rebuilds, user_id)
                    if tombstone is not None:
                        doc = json.dumps(tombstone.to_json())
                        pipe.set(p + "tombstone", doc, ex=ttl_s)
                    deleted, *_ = await pipe.execute()
                    break
                except WatchError:
                    continue
        members = await _done(self._r.smembers(self._degraded))
        stale = [m for m in members if _decode_member(m)[0] == user_id]
        if stale:
            await _done(self._r.srem(self._degraded, *stale))
        return Forgotten(
            nodes=len(node_ids),
            redis_keys=int(deleted),
            tombstone_ttl_s=ttl_s if tombstone else None,
        )


# A field of the message index no message id can be (ids are never empty): every L1 of the
# user is in the index, those written before it existed included.
_SOURCES_COMPLETE = ""

# Every per-user key whose name does not depend on a node (the levels are listed apart).
_FIXED_SUFFIXES = (
    "state",
    "seen",
    "forgotten",
    "outbox",
    "outbox:consolidator",
    "keys",
    "sources",
    "expiry",
    "rebuild",
)


def _text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


def _tombstone(raw: bytes | str | None) -> Tombstone | None:
    return Tombstone.from_json(json.loads(raw)) if raw else None


# The segmenter's outbox keeps its first key, so an upgrade still publishes what it left.
_OUTBOX_KEYS: dict[OutboxName, str] = {
    "segmenter": "outbox",
    "consolidator": "outbox:consolidator",
}


def _degraded_member(user_id: str, node_id: str) -> str:
    # JSON keeps the two apart whatever characters either holds ("|" included).
    return json.dumps([user_id, node_id])


def _legacy_member(user_id: str, node_id: str) -> str:
    return f"{user_id}|{node_id}"


def _decode_member(member: bytes | str) -> tuple[str, str]:
    """(user, node id) of a `degraded` member, either format.

    Before JSON, members were "user|node id"; node ids are uuids, so the last "|" splits
    those written then, and they are still read until each node's next write replaces them.
    """
    text = member.decode() if isinstance(member, bytes) else member
    if text.startswith("["):
        pair = json.loads(text)
        return str(pair[0]), str(pair[1])
    user_id, _, node_id = text.rpartition("|")
    return user_id, node_id
