"""The tree's nodes in Redis: their documents, links and level indexes (`keys`), read by
recall, the consolidator and the segmenter, and written by the consolidator's commit."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memstream.adapters.redis import keys
from memstream.adapters.redis.base import RedisBase, done
from memstream.adapters.redis.session_terms import decoded_terms, encoded_terms
from memstream.contracts.codec import decode_node, encode_node
from memstream.domain.forgetting import Guard
from memstream.domain.lexical import term_set
from memstream.domain.models import Level, MemoryNode, StoredNode


def _line_up(node_ids: Sequence[str], found: Mapping[str, MemoryNode]) -> list[MemoryNode]:
    """The found nodes among `node_ids`, in that order, then their found ancestors."""
    line = {i: found[i] for i in node_ids if i in found}
    for node in list(line.values()):
        while (parent := node.parent_id) is not None and parent in found and parent not in line:
            node = line[parent] = found[parent]
    return list(line.values())


# Up to this many sessions, their summaries are read with their terms, in one round trip: a
# live conversation's pool is one session, whose summary is not written yet, and reading its
# terms then its node took two. More (a long history's pool) are read whole only when their
# terms are not kept: decoding them was most of such a read, and reading them cost as much.
_READ_ALONG_SESSIONS = 2


class RedisNodes(RedisBase):
    """`ports.NodeReader` and `ports.ConsolidatorStore.commit_nodes`."""

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
            self._queue_degraded(pipe, user_id, [s.node for s in nodes])
            for node in removed:
                self._queue_removal(pipe, node)
            if outbox:
                pipe.rpush(
                    self._key(user_id, keys.OUTBOX["consolidator"]),
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
        p = keys.user_prefix(user_id, self._ns)
        docs: dict[str, str] = {}
        levels: dict[int, dict[str, float]] = {}
        children: dict[str, list[str]] = {}
        registered: dict[str, None] = {}
        sources: dict[str, str] = {}
        terms: dict[str, str] = {}
        unjoinable: list[str] = []  # sessions whose terms are not kept: readers tokenise them
        for node, fingerprint in nodes:
            if node.user_id != user_id:  # its keys would be another user's (another slot)
                raise ValueError(f"node {node.id} belongs to another user")
            doc = encode_node(node) | {"fingerprint": fingerprint}
            docs[p + keys.node(node.id)] = json.dumps(doc)
            levels.setdefault(int(node.level), {})[node.id] = node.t_end.timestamp()
            registered[keys.node(node.id)] = None
            if node.parent_id:
                children.setdefault(node.parent_id, []).append(node.id)
                registered[keys.children(node.parent_id)] = None
            if node.level == Level.SEGMENT:
                sources.update(dict.fromkeys(node.source_ids, node.id))
            elif node.level == Level.SESSION:
                field = encoded_terms(node.text)
                if field is None:
                    unjoinable.append(node.id)
                else:
                    terms[node.id] = field
        # MSET as redis-py's `mset` sends it, which its cluster pipeline blocks (for keys of
        # several slots): these are one user's, one slot.
        pipe.execute_command("MSET", *itertools.chain.from_iterable(docs.items()))
        for level, scores in levels.items():
            pipe.zadd(p + keys.level(level), scores)
        for parent_id, ids in children.items():
            pipe.sadd(p + keys.children(parent_id), *ids)
        pipe.sadd(p + keys.KEYS, *registered)
        if sources:
            pipe.hset(p + keys.SOURCES, mapping=sources)
        if terms:
            pipe.hset(p + keys.SESSION_TERMS, mapping=terms)
        if unjoinable:
            pipe.hdel(p + keys.SESSION_TERMS, *unjoinable)

    def _queue_removal(self, pipe: Any, node: MemoryNode) -> None:
        """A node and every link to it go: its key, its place in its level and its parent."""
        p = keys.user_prefix(node.user_id, self._ns)
        pipe.delete(p + keys.node(node.id), p + keys.children(node.id))
        pipe.zrem(p + keys.level(node.level), node.id)
        if node.parent_id:
            pipe.srem(p + keys.children(node.parent_id), node.id)
        pipe.srem(p + keys.KEYS, keys.node(node.id), keys.children(node.id))
        if node.level == Level.SEGMENT and node.source_ids:
            pipe.hdel(p + keys.SOURCES, *node.source_ids)
        if node.level == Level.SESSION:
            pipe.hdel(p + keys.SESSION_TERMS, node.id)
        self._queue_not_degraded(pipe, node.user_id, [node.id])

    def _queue_degraded(self, pipe: Any, user_id: str, nodes: Sequence[MemoryNode]) -> None:
        """Each node's degraded marker follows its last write: in the set of all users
        (what the clock retries) and in the user's own (what its overview counts)."""
        last = {n.id: n.degraded for n in nodes}  # a later write of the same id wins
        marked = [i for i, degraded in last.items() if degraded]
        if marked:
            pipe.sadd(
                self._across_users(keys.degraded, user_id),
                *(keys.degraded_member(user_id, i) for i in marked),
            )
            pipe.sadd(self._key(user_id, keys.DEGRADED), *marked)
        self._queue_not_degraded(pipe, user_id, [i for i, degraded in last.items() if not degraded])

    def _queue_not_degraded(self, pipe: Any, user_id: str, node_ids: Sequence[str]) -> None:
        """The nodes' markers go from both sets, those of an older version's format too."""
        if not node_ids:
            return
        members = itertools.chain.from_iterable(
            (keys.degraded_member(user_id, i), keys.legacy_member(user_id, i)) for i in node_ids
        )
        pipe.srem(self._across_users(keys.degraded, user_id), *members)
        pipe.srem(self._key(user_id, keys.DEGRADED), *node_ids)

    async def get(self, user_id: str, node_id: str) -> StoredNode | None:
        raw = await self._r.get(self._key(user_id, keys.node(node_id)))
        if raw is None:
            return None
        doc = json.loads(raw)
        return StoredNode(decode_node(doc), doc.get("fingerprint", ""))

    async def get_many(self, user_id: str, node_ids: Sequence[str]) -> list[MemoryNode]:
        """The nodes that exist among `node_ids`, in the given order."""
        if not node_ids:
            return []
        p = keys.user_prefix(user_id, self._ns)
        names = [p + keys.node(i) for i in node_ids]
        raws = await self._r.mget(names)
        decode = self.node_cache.decode
        return [decode(r, k) for k, r in zip(names, raws, strict=True) if r is not None]

    async def get_with_ancestors(self, user_id: str, node_ids: Sequence[str]) -> list[MemoryNode]:
        """The nodes among `node_ids` and all their ancestors, read in one MGET when this
        process has read them before.

        Recall climbs from the leaves' sessions to the profile, one level a round trip (four
        MGETs). The decoded-node cache remembers each ancestor's parent from an earlier read,
        so the ancestors are guessed and read in the same MGET as the nodes asked for. A guess
        only picks keys: every node returned is decoded from bytes read by this call, and an
        ancestor the guess missed (a new or moved parent) is read by another MGET.
        """
        p = keys.user_prefix(user_id, self._ns)
        found: dict[str, MemoryNode] = {}
        asked: set[str] = set()
        line: list[MemoryNode] = []
        pending = list(dict.fromkeys(node_ids))
        while pending:
            wanted = dict.fromkeys(pending)
            for node_id in pending:
                guess = self.node_cache.peek(p + keys.node(node_id))
                # Each step adds a new id, so even a cycle of stale parents ends.
                while guess is not None and guess.parent_id and guess.parent_id not in wanted:
                    if guess.parent_id in asked:
                        break
                    wanted[guess.parent_id] = None
                    guess = self.node_cache.peek(p + keys.node(guess.parent_id))
            asked.update(wanted)
            for node in await self.get_many(user_id, list(wanted)):
                found.setdefault(node.id, node)
            line = _line_up(node_ids, found)  # a wrong guess read a node that is not on it
            pending = list(
                dict.fromkeys(n.parent_id for n in line if n.parent_id and n.parent_id not in asked)
            )
        return line

    async def session_terms(
        self, user_id: str, session_ids: Sequence[str]
    ) -> dict[str, frozenset[str]]:
        """The term set of each session summary that exists among `session_ids`: the field
        kept beside it (`session_terms`), or, for a summary written before the field existed
        or under other word rules, its node read and tokenised."""
        if not session_ids:
            return {}
        terms_key = self._key(user_id, keys.SESSION_TERMS)
        along: dict[str, tuple[str, Any]] | None = None
        if len(session_ids) <= _READ_ALONG_SESSIONS:
            p = keys.user_prefix(user_id, self._ns)
            names = [p + keys.node(i) for i in session_ids]
            pipe = self._r.pipeline(transaction=False)
            pipe.hmget(terms_key, list(session_ids))
            for name in names:  # GETs: a cluster client's pipeline refuses MGET
                pipe.get(name)
            fields, *raws = await pipe.execute()
            along = dict(zip(session_ids, zip(names, raws, strict=True), strict=True))
        else:
            fields = await done(self._r.hmget(terms_key, list(session_ids)))
        found: dict[str, frozenset[str]] = {}
        unkept: list[str] = []
        for session_id, raw in zip(session_ids, fields, strict=True):
            terms = None if raw is None else decoded_terms(raw)
            if terms is None:
                unkept.append(session_id)
            else:
                found[session_id] = terms
        if along is None:
            nodes = await self.get_many(user_id, unkept)
        else:
            read = [along[i] for i in unkept]
            nodes = [self.node_cache.decode(r, k) for k, r in read if r is not None]
        for node in nodes:
            if node.user_id == user_id:
                found[node.id] = term_set(node.text)
        return found

    async def children_ids(self, user_id: str, node_id: str) -> list[str]:
        raw = await done(self._r.smembers(self._key(user_id, keys.children(node_id))))
        return sorted(r.decode() if isinstance(r, bytes) else r for r in raw)

    async def recent(
        self, user_id: str, level: Level, count: int, before: datetime | None = None
    ) -> list[MemoryNode]:
        """The `count` newest nodes of a level ending before `before`, oldest first."""
        if count <= 0:
            return []
        top = f"({before.timestamp()}" if before else "+inf"
        ids = await self._r.zrevrangebyscore(
            self._key(user_id, keys.level(level)), top, "-inf", start=0, num=count
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
            self._key(user_id, keys.level(level)), start, end, start=offset, num=limit
        )
        return [i.decode() if isinstance(i, bytes) else i for i in ids]

    async def count(self, user_id: str, level: Level) -> int:
        return int(await self._r.zcard(self._key(user_id, keys.level(level))))

    async def profile(self, user_id: str) -> MemoryNode | None:
        # By end, not by last write: a late month consolidated again is not the newest one.
        newest = await self.recent(user_id, Level.MONTH, 1)
        return newest[0] if newest else None
