"""The tree as one consolidation batch sees it: the store, plus what the batch has written.

A batch commits its nodes only after their vectors are in the index, but a closure later in
the same batch (the parent window) must already see the nodes written before it. They are
held here, in front of the store, until the batch commits them.
"""

from __future__ import annotations

from datetime import datetime

from memstream.domain.calendar import to_utc
from memstream.domain.models import Level, MemoryNode, StoredNode
from memstream.ports import NodeReader


class BatchView:
    def __init__(self, tree: NodeReader) -> None:
        self._tree = tree
        self._written: dict[tuple[str, str], StoredNode] = {}
        self._removed: dict[tuple[str, str], MemoryNode] = {}

    def put(self, stored: StoredNode) -> None:
        self._written[(stored.node.user_id, stored.node.id)] = stored
        self._removed.pop((stored.node.user_id, stored.node.id), None)

    def remove(self, node: MemoryNode) -> None:
        """A node left with no children (its messages forgotten): it goes at the commit."""
        self._written.pop((node.user_id, node.id), None)
        self._removed[(node.user_id, node.id)] = node

    def removed(self) -> list[MemoryNode]:
        return list(self._removed.values())

    def written(self) -> list[StoredNode]:
        """Every node written in this batch, the last version of each, in writing order."""
        return list(self._written.values())

    async def get(self, user_id: str, node_id: str) -> StoredNode | None:
        if (user_id, node_id) in self._removed:
            return None
        mine = self._written.get((user_id, node_id))
        return mine if mine is not None else await self._tree.get(user_id, node_id)

    async def children(self, user_id: str, node_id: str) -> list[MemoryNode]:
        """The children of a node by start (ties by id), as the store would list them."""
        ids = set(await self._tree.children_ids(user_id, node_id))
        ids.update(
            i for (u, i), s in self._written.items() if (u, s.node.parent_id) == (user_id, node_id)
        )
        ordered = sorted(i for i in ids if (user_id, i) not in self._removed)
        stored = {
            n.id: n
            for n in await self._tree.get_many(
                user_id, [i for i in ordered if (user_id, i) not in self._written]
            )
        }
        nodes = [
            self._written[(user_id, i)].node if (user_id, i) in self._written else stored.get(i)
            for i in ordered
        ]
        return sorted((n for n in nodes if n is not None), key=lambda n: to_utc(n.t_start))

    async def recent(
        self, user_id: str, level: Level, count: int, before: datetime
    ) -> list[MemoryNode]:
        """The `count` newest nodes of a level ending before `before`, oldest first."""
        if count <= 0:
            return []
        mine = [
            s.node for (u, _), s in self._written.items() if u == user_id and s.node.level == level
        ]
        # Ask for enough that dropping the ones this batch rewrote still leaves `count`.
        stored = await self._tree.recent(user_id, level, count + len(mine), before=before)
        rewritten = {n.id for n in mine}
        limit = before.timestamp()
        merged = [n for n in stored if n.id not in rewritten]
        merged += [n for n in mine if n.t_end.timestamp() < limit]
        merged.sort(key=lambda n: (n.t_end.timestamp(), n.id))
        return merged[-count:]
