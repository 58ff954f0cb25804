"""A user's lost store written again from the other, without deriving anything again.

- **The index from the tree.** Every node in Redis whose point is missing from the index, or
  holds another version, is upserted: the payload from the node, the lexical vector from its
  text, the dense vector as the write path makes it (a leaf: the mean of its verbatim
  messages' embeddings; a summary: the embedded head of its text), with the configured
  embedder.
- **The tree from the index.** Every point whose node is missing from Redis is written back
  as the payload keeps it (the whole node but its children, which come from the parents the
  other points name), at the same version, with the fingerprint the consolidator would give
  it from those children, so that nothing is consolidated again for it. With the knowledge
  write on the offline rules (`knowledge_rules`), the L1s' facts and entity surfaces are
  read again from their messages and committed with them, with the facts their messages
  imply by their frames when the segmenter reads those (`frames`: the messages are embedded
  again for it, as the segmenter embeds them); the facts an LLM read are not asked for
  again (a rebuild under a new prompt version derives them).

Nodes already present at the same version are passed over, so a repair run twice writes
nothing the second time, and one stopped midway (a kill) resumes where it stopped when run
again. The writes are paced at `nodes_per_s`, like a rebuild, so a repair beside live traffic
leaves Redis, Qdrant and the embedder their room.

A node the segmenter or the consolidator writes while the repair runs may meet the repair's
write of an older version: the index is read again after each page and a point that moved is
upserted again; the tree is only written where a node is absent, and never for a user with a
tombstone (a forget in progress, or one the tombstone still guards against replays).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from memstream import faults
from memstream.domain.fact_frames import Frames, framed_change
from memstream.domain.forgetting import Guard
from memstream.domain.knowledge import KnowledgeChange, knowledge_change
from memstream.domain.models import IndexedMemory, Level, MemoryNode, StoredNode
from memstream.domain.node_vectors import embedded_texts, indexed_memories
from memstream.domain.nodes import fingerprint
from memstream.ports import Embedder
from memstream.ports.repair import IndexScan, TreeRestore

# Pages of 256: the local embedder splits a call into pieces of 64 over its model processes.
_PAGE = 256
log = logging.getLogger(__name__)
# Every user of a deployment, for `--all` (facets and SCANs stop at this many).
ALL_USERS = 1_000_000


@dataclass(slots=True)
class RepairProgress:
    user_id: str
    nodes: int = 0  # to look at: the tree's nodes and the index's points
    looked_at: int = 0
    indexed: int = 0  # points written again into the index
    restored: int = 0  # nodes written again into the tree
    done: bool = False


class Pacer:
    """At most `per_s` units a second, on average since the start."""

    def __init__(
        self,
        per_s: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if per_s <= 0:
            raise ValueError("per_s must be positive")
        self._per_s = per_s
        self._clock = clock
        self._sleep = sleep
        self._start = clock()
        self._units = 0

    async def spent(self, units: int) -> None:
        self._units += units
        ahead = self._units / self._per_s - (self._clock() - self._start)
        if ahead > 0:
            await self._sleep(ahead)


class StoreRepair:
    def __init__(
        self,
        *,
        tree: TreeRestore,
        index: IndexScan,
        embedder: Embedder,
        nodes_per_s: float,
        page: int = _PAGE,
        knowledge_rules: bool = False,
        frames: Callable[[], Awaitable[Frames]] | None = None,
    ) -> None:
        self._knowledge_rules = knowledge_rules
        self._frames = frames
        self._tree = tree
        self._index = index
        self._embedder = embedder
        self._nodes_per_s = nodes_per_s
        self._page = page

    async def users(self) -> list[str]:
        """Every user either store knows: the tree's, and the index's (all that is left
        when Redis was lost)."""
        in_tree = await self._tree.users_with_nodes(ALL_USERS)
        return sorted(set(in_tree) | set(await self._index.users_with_points(ALL_USERS)))

    async def repair(
        self, user_id: str, on_progress: Callable[[RepairProgress], None] = lambda _: None
    ) -> RepairProgress:
        """The user's index from its tree, then its tree from its index."""
        progress = RepairProgress(user_id)
        for level in Level:
            progress.nodes += await self._tree.count(user_id, level)
            progress.nodes += await self._index.count(user_id, level)
        on_progress(progress)
        pacer = Pacer(self._nodes_per_s)
        await self._index_from_tree(progress, pacer, on_progress)
        await self._tree_from_index(progress, pacer, on_progress)
        progress.done = True
        progress.looked_at = max(progress.looked_at, progress.nodes)
        on_progress(progress)
        return progress

    async def _index_from_tree(
        self, progress: RepairProgress, pacer: Pacer, on_progress: Callable[[RepairProgress], None]
    ) -> None:
        user_id = progress.user_id
        for level in Level:
            offset = 0
            while ids := await self._tree.level_ids(
                user_id, level, offset=offset, limit=self._page
            ):
                offset += len(ids)
                nodes = await self._tree.get_many(user_id, ids)
                stale = await self._stale_points(user_id, nodes)
                if stale:
                    await self._index.upsert(await self._indexed(stale))
                    # Written meanwhile by a worker: index the version the tree has now.
                    moved = await self._stale_points(
                        user_id, await self._tree.get_many(user_id, ids)
                    )
                    if moved:
                        await self._index.upsert(await self._indexed(moved))
                faults.reach("repair.after_page")
                progress.looked_at += len(ids)
                progress.indexed += len(stale)
                on_progress(progress)
                await pacer.spent(len(stale))

    async def _stale_points(self, user_id: str, nodes: Sequence[MemoryNode]) -> list[MemoryNode]:
        indexed = await self._index.versions(user_id, [n.id for n in nodes])
        return [n for n in nodes if indexed.get(n.id) != n.version]

    async def _indexed(self, nodes: Sequence[MemoryNode]) -> list[IndexedMemory]:
        """The nodes with their vectors, made as the segmenter and the consolidator make them."""
        vectors = await self._embedder.embed([t for n in nodes for t in embedded_texts(n)])
        return indexed_memories(nodes, vectors)

    async def _tree_from_index(
        self, progress: RepairProgress, pacer: Pacer, on_progress: Callable[[RepairProgress], None]
    ) -> None:
        user_id = progress.user_id
        stone = await self._tree.tombstone(user_id)
        if stone is not None:
            # Forgotten: points left in the index (a forget that stopped between Redis and
            # Qdrant) must not bring the user back; the forget's own retry removes them.
            log.warning("repair of %s: forgotten, its tree is not written back", user_id)
            return
        points: list[MemoryNode] = []
        after: str | None = None
        progress.nodes = progress.looked_at + await self._index.count(user_id)
        while True:
            page, after = await self._index.user_nodes(user_id, after, 256)
            points += page
            if after is None or not page:
                break
        children: dict[str, list[MemoryNode]] = {}
        for node in points:
            if node.parent_id:
                children.setdefault(node.parent_id, []).append(node)
        for start in range(0, len(points), self._page):
            page = points[start : start + self._page]
            present = {n.id for n in await self._tree.get_many(user_id, [n.id for n in page])}
            absent = [n for n in page if n.id not in present]
            if absent:
                # The facts and entities of the L1s were in the lost Redis too: the offline
                # rules read them again from the verbatim messages, as the segmenter did.
                known = await self._knowledge_of(absent) if self._knowledge_rules else None
                stored = [_as_stored(n, children.get(n.id, [])) for n in absent]
                if not await self._tree.restore_nodes(user_id, stored, known, Guard(None)):
                    log.warning("repair of %s: forgotten meanwhile, stopped", user_id)
                    return
            faults.reach("repair.after_page")
            progress.looked_at += len(page)
            progress.restored += len(absent)
            on_progress(progress)
            await pacer.spent(len(absent))

    async def _knowledge_of(self, nodes: Sequence[MemoryNode]) -> KnowledgeChange:
        """What the rules read in the L1s among `nodes`, with what their messages imply by
        their frames when those are read: a restored L1 says what it said when written."""
        if self._frames is None:
            return knowledge_change(nodes)
        leaves = [n for n in nodes if n.level == Level.SEGMENT]
        texts = list(dict.fromkeys(t for n in leaves for t in embedded_texts(n)))
        vectors = dict(zip(texts, await self._embedder.embed(texts), strict=True)) if texts else {}
        return framed_change(nodes, (), vectors, await self._frames())


def _as_stored(node: MemoryNode, children: Sequence[MemoryNode]) -> StoredNode:
    """A node from its payload as the tree keeps it: its children in the consolidator's order
    (by start, then id) and, above L1, the fingerprint of those children."""
    ordered = sorted(children, key=lambda c: (c.t_start, c.id))
    node = replace(node, children=tuple(c.id for c in ordered))
    if node.level == Level.SEGMENT:
        return StoredNode(node, "")
    return StoredNode(node, fingerprint(ordered, node.derivation))
