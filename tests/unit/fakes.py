"""In-memory stand-ins for the stores, models and broker, plus a small sound tree."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.unit.fake_directory import FakeDirectory

from memstream.bootstrap import Container
from memstream.contracts.catalog import load_catalog
from memstream.contracts.codec import decode_state
from memstream.contracts.held import held_in_state
from memstream.contracts.knowledge_codec import (
    decode_fact,
    decode_head,
    decode_leaf_entities,
    decode_slot_facts,
    encode_fact,
    encode_head,
    encode_leaf_entities,
)
from memstream.contracts.records import Outbound
from memstream.domain.entity_index import Entity, EntityIndex, LeafEntities
from memstream.domain.fact_changes import touches_facts
from memstream.domain.fact_heads import SlotHead
from memstream.domain.facts import AtomicFact
from memstream.domain.forgetting import Forgotten, Guard, Tombstone
from memstream.domain.knowledge import (
    KnowledgeChange,
    current_facts,
    entities_by_key,
    entity_index,
    fact_history,
    fact_versions,
    named_entity,
    said_before,
)
from memstream.domain.lexical import term_set
from memstream.domain.models import (
    Complexity,
    IndexedMemory,
    Level,
    MemoryNode,
    Plan,
    ScoredId,
    SourceMessage,
    SparseVector,
    StoredNode,
)
from memstream.domain.query import Query
from memstream.domain.rebuild import RebuildJob, RebuildPlan
from memstream.domain.remembered import Lookup, Remembered
from memstream.domain.step import EXPIRY_READ, UserSnapshot
from memstream.domain.write_token import HeldMessages
from memstream.ports import ConsolidatorSnapshot, OutboxName, UserCommit
from memstream.settings import Settings

BASE = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)  # a Monday


def node(
    user: str,
    node_id: str,
    level: Level,
    start: datetime,
    end: datetime,
    parent: str | None,
    text: str = "",
    sources: tuple[str, ...] = (),
) -> MemoryNode:
    return MemoryNode(
        id=node_id,
        user_id=user,
        level=level,
        t_start=start,
        t_end=end,
        text=text or f"{level.label} memory {node_id} of {user}",
        parent_id=parent,
        source_ids=sources or (f"msg-{node_id}",),
    )


def leaf(node_id: str, *texts: str, at: datetime, speaker: str = "Dana") -> MemoryNode:
    """An L1 of u1 quoting `texts`, one message each (ids `{node_id}-m0`, ...), all said by
    `speaker` at `at`, under the date line a leaf's text opens with."""
    messages = tuple(
        SourceMessage(f"{node_id}-m{n}", speaker, "user", text, at) for n, text in enumerate(texts)
    )
    quoted = " ".join(f'{m.speaker}: "{m.text}"' for m in messages)
    return MemoryNode(
        id=node_id,
        user_id="u1",
        level=Level.SEGMENT,
        t_start=at,
        t_end=at,
        text=f"{at.day} {at:%B %Y}, {quoted}",
        source_ids=tuple(m.event_id for m in messages),
        messages=messages,
    )


def sample_tree(user: str = "u1") -> list[MemoryNode]:
    """One month, two weeks, four days, eight sessions, three leaves per session."""
    nodes = [node(user, f"{user}-m", Level.MONTH, BASE, BASE + timedelta(days=14), None)]
    for w in range(2):
        week_start = BASE + timedelta(days=7 * w)
        nodes.append(
            node(
                user,
                f"{user}-w{w}",
                Level.WEEK,
                week_start,
                week_start + timedelta(days=7),
                f"{user}-m",
            )
        )
        for d in range(2):
            day_start = week_start + timedelta(days=d)
            day_id = f"{user}-d{w}{d}"
            nodes.append(
                node(
                    user,
                    day_id,
                    Level.DAY,
                    day_start,
                    day_start + timedelta(hours=12),
                    f"{user}-w{w}",
                )
            )
            for s in range(2):
                s_start = day_start + timedelta(hours=3 * s)
                s_id = f"{user}-s{w}{d}{s}"
                nodes.append(
                    node(user, s_id, Level.SESSION, s_start, s_start + timedelta(hours=1), day_id)
                )
                for leaf in range(3):
                    t = s_start + timedelta(minutes=10 * leaf)
                    nodes.append(
                        node(
                            user,
                            f"{user}-l{w}{d}{s}{leaf}",
                            Level.SEGMENT,
                            t,
                            t + timedelta(minutes=5),
                            s_id,
                        )
                    )
    return link(nodes)


class CountedLeaves(dict[str, LeafEntities]):
    """An entity index's leaf table that counts the leaves read from it and refuses a walk of
    all of them: what tests of recall's work per request put in an index."""

    def __init__(self, leaves: Mapping[str, LeafEntities]) -> None:
        super().__init__(leaves)
        self.read = 0

    def __getitem__(self, key: str) -> LeafEntities:
        self.read += 1
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read += 1
        return super().get(key, default)

    def items(self) -> Any:
        raise AssertionError("every leaf of the user read")

    def values(self) -> Any:
        raise AssertionError("every leaf of the user read")


def link(nodes: Sequence[MemoryNode]) -> list[MemoryNode]:
    """Fill `children` and derive `source_ids` bottom-up, as the consolidator does."""
    by_id = {n.id: n for n in nodes}
    for level in sorted({n.level for n in nodes})[1:]:
        for n in [n for n in by_id.values() if n.level == level]:
            kids = sorted(k.id for k in by_id.values() if k.parent_id == n.id)
            sources = tuple(s for k in kids for s in by_id[k].source_ids)
            by_id[n.id] = replace(n, children=tuple(kids), source_ids=sources or n.source_ids)
    return list(by_id.values())


class FakeTree(FakeDirectory):
    """An in-memory `TreeStore`, held to RedisTree's contract by tests/integration/tree_contract.

    Nodes given to the constructor (or `add`) are stored as the consolidator would store them.
    `get_many_calls` counts reads, for tests of how recall batches them; `read_ids` lists
    the nodes they returned.
    """

    def __init__(self, nodes: Sequence[MemoryNode] = ()) -> None:
        self.stored: dict[tuple[str, str], StoredNode] = {}
        self.children: dict[tuple[str, str], set[str]] = {}
        self.states: dict[str, str] = {}  # JSON, as Redis keeps it: a loaded state is a copy
        self.seen: dict[str, dict[str, int]] = {}  # user -> event id -> content mark
        self.outboxes: dict[tuple[str, OutboxName], list[str]] = {}
        self.due: dict[str, float] = {}
        self.degraded_nodes: set[tuple[str, str]] = set()
        self.tombstones: dict[str, Tombstone] = {}
        self.forgotten: dict[str, set[str]] = {}  # user -> forgotten event ids
        self.reaches: dict[str, dict[str, list[str]]] = {}  # user -> forgotten id -> nodes
        self.sources: dict[str, dict[str, str]] = {}  # user -> message id -> L1 id
        self.deadlines: dict[str, dict[str, float]] = {}  # user -> message id -> deadline
        self.rebuild_jobs: dict[str, str] = {}  # user -> JSON of the job
        self.rebuild_plans: dict[str, RebuildPlan] = {}  # user -> its leaf and window ids
        self.rebuilds: dict[str, float] = {}  # user -> when its next chunk is due
        # user -> L1 id -> JSON of its facts / its entity surfaces, as Redis keeps them
        self.leaf_facts: dict[str, dict[str, str]] = {}
        self.fact_heads: dict[str, dict[tuple[str, str, str], str]] = {}
        self.leaf_entities: dict[str, dict[str, str]] = {}
        self.next_offsets: dict[int, int] = {}  # turns partition -> next offset to handle
        # (tenant's turns topic, partition) -> next offset to handle
        self.topic_offsets: dict[tuple[str, int], int] = {}
        self.now = 0.0  # epoch seconds of commits (what the rebuild list is scored with)
        self.written: dict[str, float] = {}  # user -> when its messages were last committed
        self.get_many_calls = 0
        self.session_terms_calls = 0
        self.loads = 0  # snapshots read (a segmenter step's, a consolidation batch's)
        self.read_ids: list[str] = []
        for n in nodes:
            self.add(n)

    @property
    def nodes(self) -> dict[tuple[str, str], MemoryNode]:
        return {key: stored.node for key, stored in self.stored.items()}

    def add(self, n: MemoryNode, fingerprint: str = "") -> None:
        self.stored[(n.user_id, n.id)] = StoredNode(n, fingerprint)
        if n.level == Level.SEGMENT:
            self.sources.setdefault(n.user_id, {}).update(dict.fromkeys(n.source_ids, n.id))
        if n.parent_id:
            self.children.setdefault((n.user_id, n.parent_id), set()).add(n.id)

    def remove(self, n: MemoryNode) -> None:
        self.stored.pop((n.user_id, n.id), None)
        if n.level == Level.SEGMENT:
            for message_id in n.source_ids:
                self.sources.get(n.user_id, {}).pop(message_id, None)
        self.children.pop((n.user_id, n.id), None)
        if n.parent_id:
            self.children.get((n.user_id, n.parent_id), set()).discard(n.id)
        self.degraded_nodes.discard((n.user_id, n.id))

    async def forgotten_messages(self, user_id: str, event_ids: Sequence[str]) -> list[bool]:
        mine = self.forgotten.get(user_id, set())
        return [e in mine for e in event_ids]

    async def forget_reaches(self, user_id: str, message_id: str) -> list[str] | None:
        return self.reaches.get(user_id, {}).get(message_id)

    async def leaves_citing(self, user_id: str, message_ids: Sequence[str]) -> list[str]:
        mine = self.sources.get(user_id, {})
        return sorted({mine[m] for m in message_ids if m in mine})

    async def expiries(self, user_id: str, limit: int = 100) -> list[tuple[str, float]]:
        ranked = sorted(self.deadlines.get(user_id, {}).items(), key=lambda p: (p[1], p[0]))
        return ranked[:limit]

    async def ping(self) -> bool:
        return True

    async def mark_progress(
        self, next_offsets: Mapping[int, int], topic: str | None = None
    ) -> None:
        if topic is None:
            self.next_offsets.update(next_offsets)
        else:
            self.topic_offsets.update({(topic, p): o for p, o in next_offsets.items()})

    async def progress(self, partitions: Sequence[int], topic: str | None = None) -> dict[int, int]:
        if topic is None:
            return {p: self.next_offsets[p] for p in partitions if p in self.next_offsets}
        marks = self.topic_offsets
        return {p: marks[(topic, p)] for p in partitions if (topic, p) in marks}

    async def held_messages(self, user_id: str) -> HeldMessages:
        raw = self.states.get(user_id)
        return held_in_state(json.loads(raw)) if raw else HeldMessages()

    async def load_state(self, user_id: str) -> dict[str, Any] | None:
        raw = self.states.get(user_id)
        return json.loads(raw) if raw else None

    async def unseen(self, user_id: str, event_ids: Sequence[str]) -> list[bool]:
        seen = self.seen.get(user_id, {})
        return [e not in seen for e in event_ids]

    async def seen_marks(self, user_id: str, event_ids: Sequence[str]) -> list[int | None]:
        seen = self.seen.get(user_id, {})
        return [seen.get(e) for e in event_ids]

    async def load_user(
        self, user_id: str, event_ids: Sequence[str], session_ids: Sequence[str] = ()
    ) -> UserSnapshot:
        """(The state holds its remembered sessions itself here: no lookups.)"""
        self.loads += 1
        doc = await self.load_state(user_id)
        raw = self.states.get(user_id)
        seen = self.seen.get(user_id, {})
        forgotten = self.forgotten.get(user_id, set())
        return UserSnapshot(
            user_id,
            state=decode_state(doc) if doc else None,
            stored=raw is not None,
            tombstone=self.tombstones.get(user_id),
            seen={e: seen[e] for e in event_ids if e in seen},
            forgotten=frozenset(e for e in event_ids if e in forgotten),
            expiries=tuple(await self.expiries(user_id, EXPIRY_READ)),
            outbox=tuple(await self.outbox(user_id, "segmenter")),
        )

    async def look_up(self, user_id: str, lookup: Lookup) -> Remembered:
        raise AssertionError("a state held whole asks for nothing")

    async def load_users(self, user_ids: Sequence[str]) -> dict[str, ConsolidatorSnapshot]:
        self.loads += 1
        return {
            u: ConsolidatorSnapshot(
                self.tombstones.get(u), tuple(await self.outbox(u, "consolidator"))
            )
            for u in user_ids
        }

    async def commit_user(self, commit: UserCommit) -> bool:
        c, user_id = commit, commit.user_id
        if c.guard is not None and not c.guard.allows(self.tombstones.get(user_id)):
            return False
        if c.rebuild is not None:
            if c.rebuild.plan is not None:
                self.rebuild_plans[user_id] = c.rebuild.plan
            self.rebuild_jobs[user_id] = json.dumps(c.rebuild.to_json())
            self.rebuilds[user_id] = float("inf") if c.rebuild.finished else self.now
        self.states[user_id] = json.dumps(c.state)
        if c.seen:
            self.written[user_id] = self.now
        self.seen.setdefault(user_id, {}).update({e: m & (2**21 - 1) for e, m in c.seen.items()})
        for n in c.removed:
            self.remove(n)
        for n in c.moved:
            if n.parent_id:
                self.children.get((user_id, n.parent_id), set()).discard(n.id)
        for n in c.nodes:
            self.add(n)
        self._apply_knowledge(user_id, c.knowledge)
        self.forgotten.setdefault(user_id, set()).update(c.forgotten)  # never expires here
        self.reaches.setdefault(user_id, {}).update(
            {m: list(c.forget_reaches) for m in c.forgotten}
        )
        deadlines = self.deadlines.setdefault(user_id, {})
        for message_id in c.forgotten:
            deadlines.pop(message_id, None)
            self.sources.get(user_id, {}).pop(message_id, None)
        deadlines.update({e: at.timestamp() for e, at in c.expiring.items()})
        self.outboxes.setdefault((user_id, "segmenter"), []).extend(map(json.dumps, c.outbox))
        if c.due is None:
            self.due.pop(user_id, None)
        else:
            self.due[user_id] = c.due.timestamp()
        return True

    def _apply_knowledge(self, user_id: str, change: KnowledgeChange) -> None:
        facts = self.leaf_facts.setdefault(user_id, {})
        surfaces = self.leaf_entities.setdefault(user_id, {})
        for leaf_id in change.dropped:
            facts.pop(leaf_id, None)
            surfaces.pop(leaf_id, None)
        for leaf_id, knowledge in change.leaves.items():
            facts.pop(leaf_id, None)
            surfaces.pop(leaf_id, None)
            if knowledge.facts:
                facts[leaf_id] = json.dumps([encode_fact(f) for f in knowledge.facts])
            if knowledge.entities.surfaces or knowledge.entities.links:
                surfaces[leaf_id] = json.dumps(encode_leaf_entities(knowledge.entities))
        heads = self.fact_heads.setdefault(user_id, {})
        if change.heads is None:
            if touches_facts(change):
                heads.clear()
            return
        for slot, head in change.heads.items():
            if head is None:
                heads.pop(slot, None)
            else:
                heads[slot] = encode_head(head)

    async def slot_heads(
        self, user_id: str, slots: Collection[tuple[str, str]]
    ) -> dict[tuple[str, str, str], SlotHead]:
        held = self.fact_heads.get(user_id, {})
        asked = [(user_id, s, a) for s, a in slots]
        return {slot: decode_head(held[slot]) for slot in asked if slot in held}

    async def slot_facts(
        self, user_id: str, slots: Collection[tuple[str, str]], leaf_ids: Collection[str]
    ) -> dict[str, tuple[AtomicFact, ...]]:
        return decode_slot_facts(self.leaf_facts.get(user_id, {}), slots, leaf_ids)

    def _observations(self, user_id: str) -> list[AtomicFact]:
        docs = self.leaf_facts.get(user_id, {}).values()
        return [decode_fact(f) for doc in docs for f in json.loads(doc)]

    async def facts(
        self,
        user_id: str,
        subject: str | None = None,
        at: datetime | None = None,
        now: datetime | None = None,
    ) -> list[AtomicFact]:
        return list(current_facts(self._observations(user_id), subject, at, now))

    async def fact_history(self, user_id: str, subject: str, attribute: str) -> list[AtomicFact]:
        return list(fact_history(self._observations(user_id), subject, attribute))

    async def fact_versions(self, user_id: str) -> list[AtomicFact]:
        return list(fact_versions(self._observations(user_id)))

    async def facts_said(self, user_id: str, before: datetime) -> list[AtomicFact]:
        return said_before(self._observations(user_id), before)

    async def entity_index(self, user_id: str) -> EntityIndex:
        docs = self.leaf_entities.get(user_id, {})
        return entity_index({k: decode_leaf_entities(json.loads(v)) for k, v in docs.items()})

    async def entities(self, user_id: str) -> list[Entity]:
        return entities_by_key(await self.entity_index(user_id))

    async def entity(self, user_id: str, name: str) -> Entity | None:
        return named_entity(await self.entity_index(user_id), name)

    async def outbox(self, user_id: str, name: OutboxName) -> list[dict[str, Any]]:
        return [json.loads(e) for e in self.outboxes.get((user_id, name), [])]

    async def clear_outbox(self, user_id: str, count: int, name: OutboxName) -> None:
        del self.outboxes.get((user_id, name), [])[: max(count, 0)]

    async def clear_outboxes(self, counts: Mapping[str, int], name: OutboxName) -> None:
        for user_id, count in counts.items():
            del self.outboxes.get((user_id, name), [])[: max(count, 0)]

    async def commit_nodes(
        self,
        user_id: str,
        nodes: Sequence[StoredNode],
        outbox: Sequence[dict[str, Any]],
        guard: Guard | None = None,
        removed: Sequence[MemoryNode] = (),
    ) -> bool:
        if any(s.node.user_id != user_id for s in nodes):
            raise ValueError("a node belongs to another user")
        if guard is not None and not guard.allows(self.tombstones.get(user_id)):
            return False
        for stored in nodes:
            self.add(stored.node, stored.fingerprint)
            marker = (user_id, stored.node.id)
            if stored.node.degraded:
                self.degraded_nodes.add(marker)
            else:
                self.degraded_nodes.discard(marker)
        for n in removed:
            self.remove(n)
        self.outboxes.setdefault((user_id, "consolidator"), []).extend(map(json.dumps, outbox))
        return True

    async def users_with_nodes(self, limit: int) -> list[str]:
        return sorted({u for u, _ in self.stored})[:limit]

    async def restore_nodes(
        self,
        user_id: str,
        nodes: Sequence[StoredNode],
        knowledge: KnowledgeChange | None,
        guard: Guard,
    ) -> bool:
        if not await self.commit_nodes(user_id, nodes, outbox=[], guard=guard):
            return False
        if knowledge is not None:
            self._apply_knowledge(user_id, knowledge)
        return True

    async def get(self, user_id: str, node_id: str) -> StoredNode | None:
        return self.stored.get((user_id, node_id))

    async def get_many(self, user_id: str, node_ids: Sequence[str]) -> list[MemoryNode]:
        self.get_many_calls += 1
        found = [self.stored[(user_id, i)].node for i in node_ids if (user_id, i) in self.stored]
        self.read_ids += [n.id for n in found]
        return found

    async def get_with_ancestors(self, user_id: str, node_ids: Sequence[str]) -> list[MemoryNode]:
        self.get_many_calls += 1
        found: dict[str, MemoryNode] = {}
        pending = list(node_ids)
        while pending:
            for i in pending:
                if i not in found and (user_id, i) in self.stored:
                    found[i] = self.stored[(user_id, i)].node
            pending = [
                n.parent_id for n in found.values() if n.parent_id and n.parent_id not in found
            ]
            pending = [i for i in pending if (user_id, i) in self.stored]
        self.read_ids += list(found)
        return list(found.values())

    async def session_terms(
        self, user_id: str, session_ids: Sequence[str]
    ) -> dict[str, frozenset[str]]:
        self.session_terms_calls += 1
        held = [self.stored.get((user_id, i)) for i in session_ids]
        return {s.node.id: term_set(s.node.text) for s in held if s is not None}

    async def children_ids(self, user_id: str, node_id: str) -> list[str]:
        return sorted(self.children.get((user_id, node_id), ()))

    def _by_end(self, user_id: str, level: Level) -> list[tuple[float, str]]:
        """A level's (end, id) pairs in order, as in Redis's sorted set."""
        return sorted(
            (s.node.t_end.timestamp(), i)
            for (u, i), s in self.stored.items()
            if u == user_id and s.node.level == level
        )

    async def recent(
        self, user_id: str, level: Level, count: int, before: datetime | None = None
    ) -> list[MemoryNode]:
        if count <= 0:
            return []
        top = before.timestamp() if before else float("inf")
        ids = [i for end, i in self._by_end(user_id, level) if end < top][-count:]
        return [self.stored[(user_id, i)].node for i in ids]

    async def level_ids(
        self,
        user_id: str,
        level: Level,
        start: float = float("-inf"),
        end: float = float("inf"),
        offset: int = 0,
        limit: int = 100,
    ) -> list[str]:
        ids = [i for t, i in self._by_end(user_id, level) if start <= t <= end]
        return ids[offset : offset + limit]

    async def count(self, user_id: str, level: Level) -> int:
        return len(self._by_end(user_id, level))

    async def profile(self, user_id: str) -> MemoryNode | None:
        newest = await self.recent(user_id, Level.MONTH, 1)
        return newest[0] if newest else None

    async def rebuild_job(self, user_id: str) -> RebuildJob | None:
        raw = self.rebuild_jobs.get(user_id)
        return RebuildJob.from_json(json.loads(raw)) if raw else None

    async def rebuild_leaves(self, user_id: str, start: int, stop: int) -> list[str]:
        plan = self.rebuild_plans.get(user_id)
        return list(plan.leaves[start:stop]) if plan else []

    async def rebuild_windows(self, user_id: str) -> list[str]:
        plan = self.rebuild_plans.get(user_id)
        return list(plan.windows) if plan else []

    async def rebuilds_due(self, now: float, limit: int) -> list[str]:
        ranked = sorted((t, u) for u, t in self.rebuilds.items() if t <= now)
        return [u for _, u in ranked[:limit]]

    async def lease_rebuild(self, user_id: str, until: float) -> None:
        if user_id in self.rebuilds:
            self.rebuilds[user_id] = until

    async def rebuilding_users(self, limit: int = 10_000) -> list[str]:
        return [u for _, u in sorted((t, u) for u, t in self.rebuilds.items())][:limit]

    async def settle_rebuild(self, user_id: str, rebuild_id: str | None) -> bool:
        job = await self.rebuild_job(user_id)
        if job is not None and (job.rebuild_id != rebuild_id or not job.finished):
            return False
        self.rebuilds.pop(user_id, None)
        return True

    async def due_users(self, now: datetime, limit: int = 10_000) -> list[str]:
        ranked = sorted((t, u) for u, t in self.due.items() if t <= now.timestamp())
        return [u for _, u in ranked[:limit]]

    async def degraded(self, limit: int = 1000) -> list[tuple[str, str]]:
        return sorted(self.degraded_nodes)[:limit]

    async def index_degraded_by_user(self) -> int:
        return 0  # the fake counts each user's degraded nodes from the one set it keeps

    async def open_window_counts(self) -> Counter[int]:
        counts: Counter[int] = Counter()
        for user in self.due:
            state = await self.load_state(user)
            for window in (state or {}).get("open_windows", {}).values():
                counts[int(window["level"])] += 1
        return counts

    async def delete_user(self, user_id: str) -> int:
        """Counts nodes, outboxes, state and markers (not the indexes: children, messages)."""
        _drop(self.children, user_id)
        gone = _drop(self.stored, user_id) + _drop(self.outboxes, user_id)
        self.written.pop(user_id, None)
        gone += (self.states.pop(user_id, None) is not None) + (
            self.seen.pop(user_id, None) is not None
        )
        gone += self.forgotten.pop(user_id, None) is not None
        self.reaches.pop(user_id, None)
        self.sources.pop(user_id, None)
        gone += self.deadlines.pop(user_id, None) is not None
        gone += self.rebuild_jobs.pop(user_id, None) is not None
        self.rebuild_plans.pop(user_id, None)
        gone += bool(self.leaf_facts.pop(user_id, None))
        self.fact_heads.pop(user_id, None)
        gone += bool(self.leaf_entities.pop(user_id, None))
        self.rebuilds.pop(user_id, None)
        self.due.pop(user_id, None)
        self.degraded_nodes = {m for m in self.degraded_nodes if m[0] != user_id}
        return gone

    async def forget(self, user_id: str, tombstone: Tombstone, ttl_s: int | None) -> Forgotten:
        nodes = sum(1 for u, _ in self.stored if u == user_id)
        gone = await self.delete_user(user_id)
        self.tombstones[user_id] = tombstone  # the fake never expires it
        return Forgotten(nodes=nodes, redis_keys=gone, tombstone_ttl_s=ttl_s)

    async def tombstone(self, user_id: str) -> Tombstone | None:
        return self.tombstones.get(user_id)

    async def open_data_key(self, user_id: str) -> None:
        """The fake seals nothing: no key to make."""

    async def rewrite_files(self) -> None:
        """The fake keeps no files: nothing to write again after a forget."""
        self.rewrites = getattr(self, "rewrites", 0) + 1


def _drop(table: dict[tuple[str, Any], Any], user_id: str) -> int:
    """Remove the user's entries of a table keyed by (user, ...); returns how many."""
    mine = [key for key in table if key[0] == user_id]
    for key in mine:
        del table[key]
    return len(mine)


class FakeIndex:
    """Leaf search by fixed scores (default: decreasing in insertion order)."""

    def __init__(
        self, tree: FakeTree, scores: dict[str, float] | None = None, delay_s: float = 0.0
    ) -> None:
        self.tree = tree
        self.scores = scores or {}
        self.delay_s = delay_s
        self.leak: list[ScoredId] = []  # ids returned whatever the user (to test defences)
        self.upserted: list[IndexedMemory] = []  # what the write path indexed, in order
        self.deleted: list[tuple[str, str]] = []  # points removed by id, (user, id)

    async def ping(self) -> bool:
        return True

    async def search_leaves(
        self,
        user_id: str,
        dense: Sequence[float],
        sparse: SparseVector,
        *,
        limit: int,
        dense_weight: float,
        level: Level = Level.SEGMENT,
    ) -> list[ScoredId]:
        await asyncio.sleep(self.delay_s)
        leaves = [n for (u, _), n in self.tree.nodes.items() if u == user_id and n.level == level]
        hits = [
            ScoredId(n.id, self.scores.get(n.id, 0.5 - 0.001 * i)) for i, n in enumerate(leaves)
        ]
        hits.sort(key=lambda h: -h.score)
        return (self.leak + hits)[:limit]

    async def upsert(self, memories: Sequence[IndexedMemory]) -> None:
        self.upserted.extend(memories)

    async def delete_user(self, user_id: str) -> int:
        return sum(1 for (u, _) in self.tree.nodes if u == user_id)

    async def delete_points(self, user_id: str, point_ids: Sequence[str]) -> None:
        self.deleted.extend((user_id, i) for i in point_ids)

    async def vacuum(self) -> None:
        """The fake keeps no files: nothing to vacuum after a forget."""
        self.vacuums = getattr(self, "vacuums", 0) + 1

    async def count(self, user_id: str, level: Level | None = None) -> int:
        return sum(
            1
            for (u, _), n in self.tree.nodes.items()
            if u == user_id and (level is None or n.level == level)
        )

    # `ports.repair.IndexScan`: the index holds what the tree holds.

    async def total(self) -> int:
        return len(self.tree.nodes)

    async def users_with_points(self, limit: int) -> list[str]:
        return sorted({u for u, _ in self.tree.nodes})[:limit]

    async def user_nodes(
        self, user_id: str, after: str | None, limit: int
    ) -> tuple[list[MemoryNode], str | None]:
        mine = sorted(
            (n for (u, _), n in self.tree.nodes.items() if u == user_id), key=lambda n: n.id
        )
        start = 0 if after is None else next(i for i, n in enumerate(mine) if n.id == after)
        page = [replace(n, children=()) for n in mine[start : start + limit]]
        following = mine[start + limit].id if start + limit < len(mine) else None
        return page, following

    async def versions(self, user_id: str, node_ids: Sequence[str]) -> dict[str, int]:
        found = await self.tree.get_many(user_id, node_ids)
        return {n.id: n.version for n in found}


class FakeEmbedder:
    dim = 4

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.calls: list[list[str]] = []  # the texts of each call

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        await asyncio.sleep(self.delay_s)
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]


@dataclass
class FakeLLM:
    """Plans a fixed complexity; gates by a fixed answer (None = cannot decide)."""

    complexity: Complexity = "simple"
    plan_delay_s: float = 0.0
    gate_answer: list[str] | str | None = "all"  # "all", "raise", None or a list of ids
    plans: int = 0
    gated: list[list[str]] = field(default_factory=list)

    async def plan(self, query: Query) -> Plan:
        self.plans += 1
        await asyncio.sleep(self.plan_delay_s)
        return Plan(complexity=self.complexity, keywords=("llm",))

    async def gate(
        self, query: Query, complexity: Complexity, candidates: Sequence[MemoryNode]
    ) -> list[str] | None:
        self.gated.append([c.id for c in candidates])
        if self.gate_answer == "raise":
            raise RuntimeError("LLM down")
        if self.gate_answer == "all":
            return [c.id for c in candidates]
        return self.gate_answer  # type: ignore[return-value]


class FakePublisher:
    def __init__(self, fail: bool = False) -> None:
        self.sent: list[Outbound] = []
        self.fail = fail

    async def publish(self, events: Sequence[Outbound]) -> None:
        if self.fail:
            raise ConnectionError("broker down")
        self.sent.extend(events)

    @property
    def commands(self) -> list[Outbound]:
        """What was sent for the workers: everything but the API's audit records."""
        return [o for o in self.sent if o.value.get("type") != "audit.v1"]

    @property
    def audited(self) -> list[dict[str, Any]]:
        return [o.value for o in self.sent if o.value.get("type") == "audit.v1"]


class FlakyPublisher(FakePublisher):
    """Fails its next `failures` publishes, as a broker that goes away for a moment."""

    def __init__(self, failures: int = 0) -> None:
        super().__init__()
        self.failures = failures

    async def publish(self, events: Sequence[Outbound]) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionError("broker went away")
        await super().publish(events)


def fake_container(
    settings: Settings, tree: FakeTree, llm: Any = None, publisher: Any = None
) -> Container:
    return Container(
        settings=settings,
        catalog=load_catalog(settings.broker.topic_prefix),
        tree=tree,  # type: ignore[arg-type]
        index=FakeIndex(tree),  # type: ignore[arg-type]
        embedder=FakeEmbedder(),
        llm=llm or FakeLLM(),
        publisher=publisher or FakePublisher(),  # type: ignore[arg-type]
    )
