"""The consolidator: a closed window in, one L2-L5 memory node out.

The node's children are the nodes linked under its deterministic id; its interval is the
window grown to cover them; its text comes from the level's prompt over the children and
the newest same-level memories. A closure whose children (ids, versions, degraded flags)
have not changed since the node was written is a no-op, so replays and duplicates change
nothing; a late child changes the fingerprint and the node is rewritten with the same id
and version + 1.

A batch has the segmenter's three phases. Load: one read of every user's tombstone and
outbox (`load_users`); the tree is then read as each closure needs it, through a
`BatchView` that shows the nodes this batch already wrote. Decide: per closure, the
domain's fingerprint says whether the node must be written again (`domain.nodes`), and the
LLM writes it. Commit: per user, the nodes and their events as one transaction.

The delivery contract is the segmenter's: durable writes first (the vectors to the index,
then one transaction per user with the nodes, their fingerprints and the outgoing events),
then publish, then clear the outbox. An outbox a crash left behind is published before the
user's next closures, and a replay after a crash at any point writes the same nodes with
the same versions.

With the knowledge write on, a monthly profile also states the facts memstream knew at the
month's end (`domain.profile_facts`), read through `ports.ProfileFacts`. They come from the
L1s under the month and before it: a change under the month changes its children (and so
its fingerprint); a forget before it re-closes the later profiles too (the segmenter), and
one whose fact lines cite a message no fact comes from any more is written again even with
the same children, so a forgotten message's fact leaves every profile. So is any node a
forget re-closes that still cites a forgotten message (a message tombstone holds it): a
profile carries lines of the profile before it, which its own children do not change.

A forget may land while a batch runs (`domain.forgetting`). The batch reads each user's
tombstone (in its load, before it publishes what an outbox held) before it reads the
tree, looks again before indexing (a user forgotten by then is dropped), and commits
under a guard: the store refuses the commit if the tombstone changed, and the points just
indexed are deleted again. A closure with no children left for a user with a tombstone
deletes its node's point, in case a crash came between indexing and that clean-up.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from memstream import faults
from memstream.consolidator.batch_view import BatchView
from memstream.contracts.codec import RemovalReason, memory_event, removed_event
from memstream.contracts.feed_events import window_consolidated_event
from memstream.contracts.records import Consumed, Outbound
from memstream.domain.derivation import Derivation
from memstream.domain.facts import AtomicFact
from memstream.domain.forgetting import Guard
from memstream.domain.models import IndexedMemory, Level, MemoryNode, StoredNode, WindowClosed
from memstream.domain.nodes import (
    changes,
    embedding_head,
    fingerprint,
    is_current,
    next_version,
    window_node,
)
from memstream.domain.profile_facts import cites_unsaid, profile_instant, profile_knowledge
from memstream.domain.sparse import document_vector
from memstream.ports import (
    ConsolidatorStore,
    Embedder,
    LanguageModel,
    ProfileFacts,
    Publisher,
    VectorIndex,
)

log = logging.getLogger(__name__)
_INSTANT = timedelta(microseconds=1)  # `facts_said` takes the first instant left out


@dataclass(frozen=True, slots=True)
class Outcome:
    closure: WindowClosed
    node: MemoryNode | None
    skipped: str | None = None
    fingerprint: str = ""  # set when the node was (re)written by this closure


class Consolidator:
    def __init__(
        self,
        *,
        tree: ConsolidatorStore,
        index: VectorIndex,
        embedder: Embedder,
        llm: LanguageModel,
        publisher: Publisher,
        memories_topic: str,
        history_window: int = 3,
        derivation: Derivation | None = None,
        knowledge: ProfileFacts | None = None,
    ) -> None:
        self._tree = tree
        self._index = index
        self._embedder = embedder
        self._llm = llm
        self._publisher = publisher
        self._memories_topic = memories_topic
        self._history = history_window
        self._derivation = derivation  # recorded on every node, part of its fingerprint
        self._knowledge = knowledge  # None: the knowledge write is off, profiles state no fact
        self.handled = 0  # closures fully processed by this instance, for progress checks

    async def handle(self, closure: WindowClosed) -> Outcome:
        [outcome] = await self.handle_batch([closure])
        return outcome

    async def handle_records(self, batch: Sequence[Consumed[WindowClosed]]) -> list[Outcome]:
        """Closures as consumed from the windows topic."""
        return await self.handle_batch([c.event for c in batch])

    async def handle_batch(self, closures: Sequence[WindowClosed]) -> list[Outcome]:
        """Consolidate closures in order; embed, index and commit the new nodes together."""
        users = list(dict.fromkeys(c.window.user_id for c in closures))
        # Load: one read of every user's tombstone (the commits' guard) and outbox.
        loaded = await self._tree.load_users(users)
        # Left over by a crash between commit and publish: published before anything new.
        await self._publish({user: loaded[user].outbox for user in users})
        guards = {user: Guard(loaded[user].tombstone) for user in users}
        view = BatchView(self._tree)
        outcomes = [await self._consolidate(closure, view, guards) for closure in closures]
        by_user: dict[str, list[StoredNode]] = {}
        for stored in view.written():
            by_user.setdefault(stored.node.user_id, []).append(stored)
        removed: dict[str, list[MemoryNode]] = {}
        for node in view.removed():
            removed.setdefault(node.user_id, []).append(node)
            by_user.setdefault(node.user_id, [])
        for user_id in list(by_user):
            if not guards[user_id].allows(await self._tree.tombstone(user_id)):
                del by_user[user_id]  # forgotten since the batch began: write nothing
        if by_user:
            await self._store_vectors([s.node for mine in by_user.values() for s in mine])
            faults.reach("consolidation.after_qdrant")
            for user_id, mine in by_user.items():
                events = [self._memory_event(s.node).to_json() for s in mine]
                events += [self._consolidated_event(s.node).to_json() for s in mine]
                ids = [s.node.id for s in mine]
                gone = removed.get(user_id, [])
                if gone:
                    events += await self._removal_events(user_id, gone)
                    # Before the commit: after it, nothing would lead a replay to the points.
                    await self._index.delete_points(user_id, [n.id for n in gone])
                if not await self._tree.commit_nodes(
                    user_id, mine, events, guards[user_id], removed=gone
                ):
                    log.info("%s forgotten during consolidation; dropping %d", user_id, len(ids))
                    await self._index.delete_points(user_id, ids)
            await self._flush_outboxes(list(by_user))
        self.handled += len(closures)
        return outcomes

    async def _removal_events(
        self, user_id: str, gone: Sequence[MemoryNode]
    ) -> list[dict[str, Any]]:
        """`memory_removed.v1` for windows left childless: by a forget of their messages, or
        `replaced` when their messages are still there, under a session a late first
        message renamed (`domain.resegment`)."""
        firsts = [n.source_ids[0] if n.source_ids else "" for n in gone]
        forgotten = await self._tree.forgotten_messages(user_id, firsts)
        by_reason: dict[RemovalReason, list[str]] = {}
        for node, was_forgotten in zip(gone, forgotten, strict=True):
            by_reason.setdefault("forget" if was_forgotten else "replaced", []).append(node.id)
        return [
            Outbound(self._memories_topic, user_id, removed_event(user_id, ids, reason)).to_json()
            for reason, ids in by_reason.items()
        ]

    async def _consolidate(
        self, closure: WindowClosed, view: BatchView, guards: dict[str, Guard]
    ) -> Outcome:
        window = closure.window
        user_id = window.user_id
        children = await view.children(user_id, closure.node_id)
        if not children:
            emptied = await view.get(user_id, closure.node_id)
            if emptied is not None and closure.reason == "late_data":
                # Every message under it was forgotten: nothing is left to summarise.
                view.remove(emptied.node)
                return Outcome(closure, None, "no children left")
            if guards[user_id].tombstone is not None:
                # A crash may have come between indexing this node and deleting it again.
                await self._index.delete_points(user_id, [closure.node_id])
            return Outcome(closure, None, "no children")
        existing = await view.get(user_id, closure.node_id)
        print_ = fingerprint(children, self._derivation)
        said = await self._facts_said(closure, children)
        # A profile citing a message no fact comes from any more (forgotten) is not current;
        # nor is any node a forget re-closes that still cites a forgotten message (a profile
        # carries lines of the one before it, which its own children do not change).
        stale = said is not None and existing is not None and cites_unsaid(existing.node, said)
        if not stale and existing is not None and closure.reason == "late_data":
            stale = await self._cites_forgotten(user_id, existing.node)
        if existing is not None and is_current(existing, print_) and not stale:
            return Outcome(closure, existing.node, "unchanged")

        history: list[MemoryNode] = []
        if self._history:
            recent = await view.recent(user_id, window.level, self._history + 1, window.start)
            history = [h for h in recent if h.id != closure.node_id][-self._history :]
        knowledge = profile_knowledge(said, window, profile_instant(children)) if said else None
        summary = await self._llm.consolidate(window.level, window, children, history, knowledge)
        node = replace(
            window_node(closure, children, summary, next_version(existing)),
            derivation=self._derivation,
        )
        if existing is not None and not changes(existing, node, print_):
            return Outcome(closure, existing.node, "unchanged")
        view.put(StoredNode(node, print_))
        # Debug: one line per window written, and a replay or a rebuild writes every window.
        log.debug(
            "consolidated %s %s v%d (%s)", node.level.label, node.id, node.version, closure.reason
        )
        return Outcome(closure, node, fingerprint=print_)

    async def _cites_forgotten(self, user_id: str, node: MemoryNode) -> bool:
        cited = sorted({s for line in node.facts for s in line.source_ids} | set(node.source_ids))
        return bool(cited) and any(await self._tree.forgotten_messages(user_id, cited))

    async def _facts_said(
        self, closure: WindowClosed, children: Sequence[MemoryNode]
    ) -> list[AtomicFact] | None:
        """The facts a profile may state: said by its last message (None below L5, or with
        the knowledge write off)."""
        window = closure.window
        if self._knowledge is None or window.level is not Level.MONTH:
            return None
        until = profile_instant(children)
        return await self._knowledge.facts_said(window.user_id, until + _INSTANT)

    async def _store_vectors(self, nodes: list[MemoryNode]) -> None:
        if not nodes:
            return
        dense = await self._embedder.embed([embedding_head(n.text) for n in nodes])
        await self._index.upsert(
            [
                IndexedMemory(n, d, document_vector(n.text))
                for n, d in zip(nodes, dense, strict=True)
            ]
        )

    def _memory_event(self, node: MemoryNode) -> Outbound:
        return Outbound(self._memories_topic, node.user_id, memory_event(node))

    def _consolidated_event(self, node: MemoryNode) -> Outbound:
        return Outbound(self._memories_topic, node.user_id, window_consolidated_event(node))

    async def _flush_outboxes(self, users: Sequence[str]) -> None:
        """Publish what the users' outboxes hold, in one call, then clear them."""
        await self._publish({user: await self._tree.outbox(user, "consolidator") for user in users})

    async def _publish(self, pending: Mapping[str, Sequence[dict[str, Any]]]) -> None:
        """Publish these outboxes' events in one call, then drop them from the outboxes."""
        events = [Outbound.from_json(e) for held in pending.values() for e in held]
        if events:
            await self._publisher.publish(events)
            for user, held in pending.items():
                await self._tree.clear_outbox(user, len(held), "consolidator")
