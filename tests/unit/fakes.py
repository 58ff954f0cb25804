"""In-memory stand-ins for the stores and models recall talks to, plus a small sound tree."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from memstream.adapters.redis.tree import StoredNode
from memstream.bootstrap import Container
from memstream.contracts.catalog import load_catalog
from memstream.contracts.records import Outbound
from memstream.domain.models import Complexity, Level, MemoryNode, Plan, ScoredId, SparseVector
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


def link(nodes: Sequence[MemoryNode]) -> list[MemoryNode]:
    """Fill `children` and derive `source_ids` bottom-up, as the consolidator does."""
    by_id = {n.id: n for n in nodes}
    for level in sorted({n.level for n in nodes})[1:]:
        for n in [n for n in by_id.values() if n.level == level]:
            kids = sorted(k.id for k in by_id.values() if k.parent_id == n.id)
            sources = tuple(s for k in kids for s in by_id[k].source_ids)
            by_id[n.id] = replace(n, children=tuple(kids), source_ids=sources or n.source_ids)
    return list(by_id.values())


class FakeTree:
    """The subset of RedisTree that recall and the API use, with call counting."""

    def __init__(self, nodes: Sequence[MemoryNode] = ()) -> None:
        self.nodes: dict[tuple[str, str], MemoryNode] = {}
        self.profiles: dict[str, str] = {}
        self.get_many_calls = 0
        for n in nodes:
            self.add(n)

    def add(self, n: MemoryNode) -> None:
        self.nodes[(n.user_id, n.id)] = n
        if n.level == Level.MONTH:
            self.profiles[n.user_id] = n.id

    async def ping(self) -> bool:
        return True

    async def get(self, user_id: str, node_id: str) -> StoredNode | None:
        n = self.nodes.get((user_id, node_id))
        return StoredNode(n, "") if n else None

    async def get_many(self, user_id: str, node_ids: Sequence[str]) -> list[MemoryNode]:
        self.get_many_calls += 1
        return [self.nodes[(user_id, i)] for i in node_ids if (user_id, i) in self.nodes]

    async def children_ids(self, user_id: str, node_id: str) -> list[str]:
        return sorted(
            i for (u, i), n in self.nodes.items() if u == user_id and n.parent_id == node_id
        )

    async def level_ids(
        self,
        user_id: str,
        level: Level,
        start: float = float("-inf"),
        end: float = float("inf"),
        offset: int = 0,
        limit: int = 100,
    ) -> list[str]:
        ranked = sorted(
            (n.t_end.timestamp(), n.id)
            for (u, _), n in self.nodes.items()
            if u == user_id and n.level == level and start <= n.t_end.timestamp() <= end
        )
        return [i for _, i in ranked[offset : offset + limit]]

    async def profile(self, user_id: str) -> MemoryNode | None:
        pid = self.profiles.get(user_id)
        return self.nodes.get((user_id, pid)) if pid else None

    async def delete_user(self, user_id: str) -> int:
        gone = [k for k in self.nodes if k[0] == user_id]
        for k in gone:
            del self.nodes[k]
        self.profiles.pop(user_id, None)
        return len(gone)


class FakeIndex:
    """Leaf search by fixed scores (default: decreasing in insertion order)."""

    def __init__(
        self, tree: FakeTree, scores: dict[str, float] | None = None, delay_s: float = 0.0
    ) -> None:
        self.tree = tree
        self.scores = scores or {}
        self.delay_s = delay_s
        self.leak: list[ScoredId] = []  # ids returned whatever the user (to test defences)

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

    async def delete_user(self, user_id: str) -> int:
        return sum(1 for (u, _) in self.tree.nodes if u == user_id)

    async def count(self, user_id: str, level: Level | None = None) -> int:
        return sum(
            1
            for (u, _), n in self.tree.nodes.items()
            if u == user_id and (level is None or n.level == level)
        )


class FakeEmbedder:
    dim = 4

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
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

    async def plan(self, query: str) -> Plan:
        self.plans += 1
        await asyncio.sleep(self.plan_delay_s)
        return Plan(complexity=self.complexity, keywords=("llm",))

    async def gate(
        self, query: str, complexity: Complexity, candidates: Sequence[MemoryNode]
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


def fake_container(
    settings: Settings, tree: FakeTree, llm: Any = None, publisher: Any = None
) -> Container:
    return Container(
        settings=settings,
        catalog=load_catalog(settings.topic_prefix),
        tree=tree,  # type: ignore[arg-type]
        index=FakeIndex(tree),  # type: ignore[arg-type]
        embedder=FakeEmbedder(),
        llm=llm or FakeLLM(),
        publisher=publisher or FakePublisher(),  # type: ignore[arg-type]
    )
