"""The consolidator: a closed window in, one L2-L5 memory node out.

The node's children are the nodes already linked under its deterministic id; its interval is
the window grown to cover them; its text comes from the level's prompt over the children and
the newest same-level memories. A closure whose children (ids and versions) have not changed
since the node was written is a no-op, so replays and duplicates change nothing; a late
child changes the fingerprint and the node is rewritten with the same id and version + 1.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from memstream.adapters.redis.tree import RedisTree
from memstream.contracts.codec import decode_window, memory_event
from memstream.contracts.records import Outbound, RawEvent
from memstream.domain.models import IndexedMemory, MemoryNode, WindowClosed
from memstream.domain.sparse import document_vector
from memstream.ports import Embedder, LanguageModel, Publisher, VectorIndex

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Outcome:
    closure: WindowClosed
    node: MemoryNode | None
    skipped: str | None = None
    fingerprint: str = ""  # set when the node was (re)written by this closure


def fingerprint(children: Sequence[MemoryNode]) -> str:
    """Identifies a set of children by id and version (and whether they were degraded)."""
    digest = hashlib.sha256()
    for child in sorted(children, key=lambda c: c.id):
        digest.update(f"{child.id}:{child.version}:{int(child.degraded)};".encode())
    return digest.hexdigest()[:32]


class Consolidator:
    def __init__(
        self,
        *,
        tree: RedisTree,
        index: VectorIndex,
        embedder: Embedder,
        llm: LanguageModel,
        publisher: Publisher,
        memories_topic: str,
        history_window: int = 3,
    ) -> None:
        self._tree = tree
        self._index = index
        self._embedder = embedder
        self._llm = llm
        self._publisher = publisher
        self._memories_topic = memories_topic
        self._history = history_window
        self.handled = 0  # closures fully processed by this instance, for progress checks

    async def handle(self, closure: WindowClosed) -> Outcome:
        [outcome] = await self.handle_batch([closure])
        return outcome

    async def handle_records(self, raws: Sequence[RawEvent]) -> list[Outcome]:
        """Closures as consumed from the windows topic."""
        return await self.handle_batch([decode_window(json.loads(r.value)) for r in raws])

    async def handle_batch(self, closures: Sequence[WindowClosed]) -> list[Outcome]:
        """Consolidate closures in order; embed and index the new nodes in one batch.

        Each node is linked in Redis as soon as it is written, so a later closure of the same
        batch (its parent window) sees it; its fingerprint is recorded only after its vector
        is in Qdrant, so a crash in between makes a replay write it again.
        """
        outcomes = [await self._consolidate(closure) for closure in closures]
        written = [
            (o.node, o.fingerprint) for o in outcomes if o.node is not None and o.fingerprint
        ]
        if written:
            nodes = [node for node, _ in written]
            dense = await self._embedder.embed([embedding_head(n.text) for n in nodes])
            await self._index.upsert(
                [
                    IndexedMemory(n, d, document_vector(n.text))
                    for n, d in zip(nodes, dense, strict=True)
                ]
            )
            for node, print_ in written:
                await self._tree.save_node(node, print_)
            await self._publisher.publish(
                [Outbound(self._memories_topic, n.user_id, memory_event(n)) for n in nodes]
            )
        self.handled += len(closures)
        return outcomes

    async def _consolidate(self, closure: WindowClosed) -> Outcome:
        window = closure.window
        user_id = window.user_id
        child_ids = await self._tree.children_ids(user_id, closure.node_id)
        children = sorted(await self._tree.get_many(user_id, child_ids), key=lambda c: c.t_start)
        if not children:
            return Outcome(closure, None, "no children")
        existing = await self._tree.get(user_id, closure.node_id)
        print_ = fingerprint(children)
        if existing and existing.fingerprint == print_ and not existing.node.degraded:
            return Outcome(closure, existing.node, "unchanged")

        history: list[MemoryNode] = []
        if self._history:
            recent = await self._tree.recent(
                user_id, window.level, self._history + 1, before=window.start
            )
            history = [h for h in recent if h.id != closure.node_id][-self._history :]
        summary = await self._llm.consolidate(window.level, window, children, history)
        node = MemoryNode(
            id=closure.node_id,
            user_id=user_id,
            level=window.level,
            t_start=min([window.start, *(c.t_start for c in children)]),
            t_end=max([window.end, *(c.t_end for c in children)]),
            text=summary.text,
            parent_id=closure.parent_id,
            children=tuple(c.id for c in children),
            source_ids=_union_sources(children),
            version=existing.node.version + 1 if existing else 1,
            degraded=summary.degraded,
            session_id=window.session_id,
            speakers=tuple(dict.fromkeys(s for c in children for s in c.speakers)),
        )
        await self._tree.save_node(node, fingerprint="")  # visible to the parent's closure
        log.info(
            "consolidated %s %s v%d (%s)", node.level.label, node.id, node.version, closure.reason
        )
        return Outcome(closure, node, fingerprint=print_)


# Summaries are found by climbing from their leaves, not by vector search, so their dense
# vector only needs the gist: the head of the text costs a fraction of the whole.
EMBEDDED_SUMMARY_WORDS = 64


def embedding_head(text: str) -> str:
    words = text.split()
    return " ".join(words[:EMBEDDED_SUMMARY_WORDS])


def _union_sources(children: Sequence[MemoryNode]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(s for c in children for s in c.source_ids))
