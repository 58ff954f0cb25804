"""The handlers' state in Redis: the segmenter's one load (`load_user`) and one commit
(`commit_user`), the seen markers, message tombstones, message index and deadlines; the
consolidator's one load (`load_users`); the outboxes (`keys` lists every key).

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

import json
from collections.abc import Mapping, Sequence
from typing import Any

import redis.exceptions

from memstream.adapters.redis import keys
from memstream.adapters.redis.base import MARK_BITS, MARK_MASK, done, text, tombstone_of
from memstream.adapters.redis.knowledge import queue_knowledge
from memstream.adapters.redis.nodes import RedisNodes
from memstream.adapters.redis.remembered import (
    composed_state,
    queue_remembered,
    queue_remembered_reads,
    remembered_from,
)
from memstream.contracts.codec import decode_state
from memstream.domain.models import Level
from memstream.domain.rebuild import RebuildJob
from memstream.domain.remembered import OLDEST_READ, Lookup, Remembered
from memstream.domain.step import EXPIRY_READ, UserSnapshot
from memstream.ports import ConsolidatorSnapshot, OutboxName, UserCommit

_PLAN_BATCH = 10_000  # ids a command, for a plan of a very long history

# The message tombstones past the horizon go, and their forgets' records with them (a read
# and the removals in one step, inside the commit's transaction; both keys are the user's).
_PRUNE_TOMBSTONES = """
local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
for i = 1, #gone, 512 do
    redis.call('HDEL', KEYS[2], unpack(gone, i, math.min(i + 511, #gone)))
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
return #gone
"""


class RedisSegmenterState(RedisNodes):
    """`ports.SegmenterStore` (with the node reads it inherits) and the outboxes."""

    async def load_state(self, user_id: str) -> dict[str, Any] | None:
        """The window state whole, its remembered sessions and window keys put back in
        (what a backup exports and the tools read)."""
        p = keys.user_prefix(user_id, self._ns)
        pipe = self._r.pipeline(transaction=False)
        pipe.get(p + keys.STATE)
        pipe.hvals(p + keys.SESSIONS)
        pipe.zrange(p + keys.CLOSED, 0, -1)
        raw, sessions, closed = await pipe.execute()
        return composed_state(json.loads(raw), sessions, closed) if raw else None

    async def look_up(self, user_id: str, lookup: Lookup) -> Remembered:
        pipe = self._r.pipeline(transaction=False)
        queue_remembered_reads(
            pipe, keys.user_prefix(user_id, self._ns), lookup.sessions, lookup.closed, lookup.oldest
        )
        return remembered_from(lookup.sessions, lookup.closed, await pipe.execute())

    async def unseen(self, user_id: str, event_ids: Sequence[str]) -> list[bool]:
        """For each event id, whether it has not been processed yet (within the horizon)."""
        return [mark is None for mark in await self.seen_marks(user_id, event_ids)]

    async def seen_marks(self, user_id: str, event_ids: Sequence[str]) -> list[int | None]:
        """For each event id, the content mark it was committed with; None if not seen."""
        if not event_ids:
            return []
        key = self._key(user_id, keys.SEEN)
        try:
            scores = await done(self._r.zmscore(key, list(event_ids)))
        except redis.exceptions.ResponseError as error:
            if "WRONGTYPE" not in str(error):
                raise
            await self._upgrade_seen_set(user_id)
            scores = await done(self._r.zmscore(key, list(event_ids)))
        return [None if s is None else int(s) & MARK_MASK for s in scores]

    async def _upgrade_seen_set(self, user_id: str) -> None:
        """Markers an older version kept as a plain set become sorted-set markers, committed
        now with no content mark (they then expire with the horizon like any other)."""
        key = self._key(user_id, keys.SEEN)
        members = await done(self._r.smembers(key))
        stamp = float(int(self._clock().timestamp()) << MARK_BITS)
        pipe = (await self._client_for(user_id)).pipeline(transaction=True)
        pipe.delete(key)
        if members:
            pipe.zadd(key, dict.fromkeys(members, stamp))
        await pipe.execute()

    async def load_user(
        self, user_id: str, event_ids: Sequence[str], session_ids: Sequence[str] = ()
    ) -> UserSnapshot:
        """Everything one segmenter step reads of a user, in one pipeline (one round trip)."""
        p = keys.user_prefix(user_id, self._ns)
        asked = list(event_ids)
        pipe = self._r.pipeline(transaction=False)
        queue_remembered_reads(pipe, p, session_ids, (), OLDEST_READ)
        pipe.get(p + keys.STATE)
        pipe.get(p + keys.TOMBSTONE)
        pipe.zrange(p + keys.EXPIRY, 0, EXPIRY_READ - 1, withscores=True)
        pipe.lrange(p + keys.OUTBOX["segmenter"], 0, -1)
        if asked:
            pipe.zmscore(p + keys.FORGOTTEN, asked)
            pipe.zmscore(p + keys.SEEN, asked)
        replies = await pipe.execute(raise_on_error=False)
        remembered_replies, replies = replies[:4], replies[4:]
        remembered = remembered_from(session_ids, (), list(map(_ok, remembered_replies)))
        state, tombstone, expiries, outbox, forgotten = map(
            _ok, replies[:5] if asked else [*replies, []]
        )
        scores = replies[5] if asked else []
        if isinstance(scores, redis.exceptions.ResponseError) and "WRONGTYPE" in str(scores):
            seen = await self.seen_marks(user_id, asked)  # upgrades an older version's markers
        else:
            seen = [None if s is None else int(s) & MARK_MASK for s in _ok(scores)]
        doc = json.loads(state) if state else None
        return UserSnapshot(
            user_id,
            state=decode_state(doc) if doc else None,
            stored=doc is not None,
            tombstone=tombstone_of(tombstone),
            seen={e: m for e, m in zip(asked, seen, strict=True) if m is not None},
            forgotten=frozenset(e for e, f in zip(asked, forgotten, strict=True) if f is not None),
            expiries=tuple((text(m), float(at)) for m, at in expiries),
            outbox=tuple(json.loads(e) for e in outbox),
            remembered=remembered,
        )

    async def load_users(self, user_ids: Sequence[str]) -> dict[str, ConsolidatorSnapshot]:
        """The consolidator's load: every user's tombstone and outbox, in one pipeline."""
        if not user_ids:
            return {}
        pipe = self._r.pipeline(transaction=False)
        for user_id in user_ids:
            p = keys.user_prefix(user_id, self._ns)
            pipe.get(p + keys.TOMBSTONE)
            pipe.lrange(p + keys.OUTBOX["consolidator"], 0, -1)
        replies = await pipe.execute()
        return {
            user_id: ConsolidatorSnapshot(
                tombstone_of(replies[2 * i]), tuple(json.loads(e) for e in replies[2 * i + 1])
            )
            for i, user_id in enumerate(user_ids)
        }

    async def commit_user(self, commit: UserCommit) -> bool:
        """Write one user's new state, nodes, knowledge, markers and outgoing events
        atomically."""
        c, user_id = commit, commit.user_id
        p = keys.user_prefix(user_id, self._ns)

        def queue(pipe: Any) -> None:
            pipe.set(p + keys.STATE, json.dumps(c.state))
            pipe.zadd(self._across_users(keys.users, user_id), {user_id: 0})  # a no-op once listed
            if c.seen:
                now = int(self._clock().timestamp())
                stamp = now << MARK_BITS
                pipe.zadd(
                    p + keys.SEEN, {e: float(stamp | (m & MARK_MASK)) for e, m in c.seen.items()}
                )
                expired = (now - self._seen_horizon_s) << MARK_BITS
                pipe.zremrangebyscore(p + keys.SEEN, "-inf", f"({expired}")
                pipe.zremrangebyrank(p + keys.SEEN, 0, -(self._seen_max + 1))
            queue_remembered(pipe, p, c.remembered)
            # Links that go before the nodes: a message of a removed leaf may be in one
            # written now (a session cut again), and a moved node may keep its parent.
            for node in c.removed:
                self._queue_removal(pipe, node)
            for node in c.moved:
                if node.parent_id:
                    pipe.srem(p + keys.children(node.parent_id), node.id)
            self._queue_nodes(pipe, user_id, [(node, "") for node in c.nodes])
            queue_knowledge(pipe, p, c.knowledge)
            if c.forgotten:
                # Scored by when: pruned past the seen markers' horizon, which outlasts the
                # turns topic's retention, so no replay can bring the message back.
                now_s = self._clock().timestamp()
                pipe.zadd(p + keys.FORGOTTEN, dict.fromkeys(c.forgotten, now_s))
                reaches = json.dumps(list(c.forget_reaches))
                pipe.hset(p + keys.FORGET_REACHES, mapping=dict.fromkeys(c.forgotten, reaches))
                pipe.eval(
                    _PRUNE_TOMBSTONES,
                    2,
                    p + keys.FORGOTTEN,
                    p + keys.FORGET_REACHES,
                    f"({now_s - self._seen_horizon_s}",
                )
                pipe.zrem(p + keys.EXPIRY, *c.forgotten)
                pipe.hdel(p + keys.SOURCES, *c.forgotten)  # a rewritten L1 no longer holds them
            if c.expiring:
                pipe.zadd(p + keys.EXPIRY, {e: at.timestamp() for e, at in c.expiring.items()})
            if c.outbox:
                pipe.rpush(p + keys.OUTBOX["segmenter"], *(json.dumps(e) for e in c.outbox))
            if c.rebuild is not None:
                queue_plan(pipe, p, c.rebuild)
                pipe.set(p + keys.REBUILD, json.dumps(c.rebuild.to_json()))
                # Unfinished: due now (the scheduler paces it); finished: listed until settled.
                score = float("inf") if c.rebuild.finished else self._clock().timestamp()
                pipe.zadd(self._across_users(keys.rebuilds, user_id), {user_id: score})
            due = self._across_users(keys.due, user_id)
            if c.due is None:
                pipe.zrem(due, user_id)
            else:
                pipe.zadd(due, {user_id: c.due.timestamp()})

        return await self._commit(user_id, queue, c.guard)

    async def forgotten_messages(self, user_id: str, event_ids: Sequence[str]) -> list[bool]:
        if not event_ids:
            return []
        scores = await done(self._r.zmscore(self._key(user_id, keys.FORGOTTEN), list(event_ids)))
        return [s is not None for s in scores]

    async def forget_reaches(self, user_id: str, message_id: str) -> list[str] | None:
        raw = await done(self._r.hget(self._key(user_id, keys.FORGET_REACHES), message_id))
        return None if raw is None else list(json.loads(raw))

    async def leaves_citing(self, user_id: str, message_ids: Sequence[str]) -> list[str]:
        if not message_ids:
            return []
        p = keys.user_prefix(user_id, self._ns)
        *held, complete = await done(
            self._r.hmget(p + keys.SOURCES, [*message_ids, keys.SOURCES_COMPLETE])
        )
        if complete is None:  # L1s written before the index existed may be missing from it
            await self._index_sources(user_id)
            held = await done(self._r.hmget(p + keys.SOURCES, list(message_ids)))
        return sorted({text(h) for h in held if h is not None})

    async def _index_sources(self, user_id: str, page: int = 500) -> None:
        """Index the messages of every L1 of the user, then mark the index complete: once
        per user, on its first message forget (L1s written since are indexed as they are
        written). Called by the segmenter, the one writer of a user's L1s, so nothing
        changes them meanwhile."""
        p = keys.user_prefix(user_id, self._ns)
        offset = 0
        while ids := await self.level_ids(user_id, Level.SEGMENT, offset=offset, limit=page):
            offset += len(ids)
            mapping = {m: n.id for n in await self.get_many(user_id, ids) for m in n.source_ids}
            if mapping:
                await done(self._r.hset(p + keys.SOURCES, mapping=mapping))
        await done(self._r.hset(p + keys.SOURCES, keys.SOURCES_COMPLETE, "1"))

    async def expiries(self, user_id: str, limit: int = 100) -> list[tuple[str, float]]:
        raw = await self._r.zrange(self._key(user_id, keys.EXPIRY), 0, limit - 1, withscores=True)
        return [(text(member), float(score)) for member, score in raw]

    async def outbox(self, user_id: str, name: OutboxName) -> list[dict[str, Any]]:
        raw = await done(self._r.lrange(self._key(user_id, keys.OUTBOX[name]), 0, -1))
        return [json.loads(r) for r in raw]

    async def clear_outbox(self, user_id: str, count: int, name: OutboxName) -> None:
        if count > 0:
            await done(self._r.ltrim(self._key(user_id, keys.OUTBOX[name]), count, -1))

    async def clear_outboxes(self, counts: Mapping[str, int], name: OutboxName) -> None:
        # Not a transaction: each trim stands alone (a crash between two leaves the other
        # user's events to be published again, as a crash before any would), and the users'
        # keys may be in different slots.
        trims = {user_id: count for user_id, count in counts.items() if count > 0}
        if not trims:
            return
        pipe = self._r.pipeline(transaction=False)
        for user_id, count in trims.items():
            pipe.ltrim(self._key(user_id, keys.OUTBOX[name]), count, -1)
        for reply in await pipe.execute(raise_on_error=False):
            _ok(reply)


def queue_plan(pipe: Any, prefix: str, job: RebuildJob) -> None:
    """The ids a job covers, written beside it once: when it is planned (replacing the last
    job's) or first stepped from a job stored whole; the leaves' go once it is finished."""
    if job.plan is not None:
        pipe.delete(prefix + keys.REBUILD_LEAVES, prefix + keys.REBUILD_WINDOWS)
        for key, ids in (
            (keys.REBUILD_LEAVES, job.plan.leaves),
            (keys.REBUILD_WINDOWS, job.plan.windows),
        ):
            for lo in range(0, len(ids), _PLAN_BATCH):
                pipe.rpush(prefix + key, *ids[lo : lo + _PLAN_BATCH])
    if job.finished:
        pipe.delete(prefix + keys.REBUILD_LEAVES)


def _ok(reply: Any) -> Any:
    """A pipeline's reply, or the error it holds raised."""
    if isinstance(reply, Exception):
        raise reply
    return reply
