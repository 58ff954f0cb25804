"""An export file written back (`memstream import`), through the workers' own commits.

The L1s go as the segmenter commits them (`commit_user`: the window state and due time, the
leaves, what their messages state, their messages marked seen, the deadlines), the L2-L5 as
the consolidator does (`commit_nodes`, with the fingerprints they were consolidated from, so
a later closure of their windows finds them current); each page is indexed first, with the
vectors the workers make (`vectors`), embedded again from the text by this deployment's
embedder. Ids, versions and derivations are the file's: nothing is derived again.

A user that already has memory is refused unless `replace` (it is forgotten first, its
tombstone kept) or unless it is the file's (its window state is the file's, and so are the
file's first L1s it holds): the same file imported again (or an import cut short) then
writes the same values again, so importing twice is importing once.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memstream.backup.export import has_memory
from memstream.backup.renaming import Renaming, renaming
from memstream.backup.vectors import indexed
from memstream.contracts.backup_format import Expiry, Header, NodeRecord, Record, UserState
from memstream.contracts.codec import encode_state
from memstream.domain.knowledge import KnowledgeChange, LeafKnowledge
from memstream.domain.models import Level, MemoryNode, StoredNode
from memstream.domain.windows import UserWindows
from memstream.ports import Embedder, UserCommit, VectorIndex
from memstream.ports.backup import BackupStore

PAGE = 200
# The zone of a user whose file holds no window state (its next turn names its own).
DEFAULT_TZ = "UTC"


class UserHasMemory(Exception):
    """The target user already has memory that this file did not write."""

    def __init__(self, user_id: str) -> None:
        super().__init__(
            f"user {user_id!r} already has memory that is not this file's; pass --replace to "
            "forget it and import the file, or --user to import under another id"
        )
        self.user_id = user_id


@dataclass
class Imported:
    """What an import wrote, and what the person running it should know."""

    user_id: str
    nodes: int = 0
    facts: int = 0
    expiries: int = 0
    replaced: bool = False  # the user's memory was forgotten first (--replace)
    repeated: bool = False  # the user already held this file's state: written again
    not_reproduced: int = 0  # nodes renamed without the pipeline's rule (`renaming`)
    other_embedder: int = 0  # nodes whose derivation names another embedder than this one


async def import_records(
    open_records: Callable[[], Iterator[Record]],
    store: BackupStore,
    index: VectorIndex,
    embedder: Embedder,
    *,
    user_id: str | None = None,
    replace: bool = False,
    embedder_id: str | None = None,
    page: int = PAGE,
    on_record: Callable[[Record], None] | None = None,
) -> Imported:
    """Write the records `open_records()` reads (called twice to give the tree another id:
    once to learn the new ids, once to write) to `user_id`, or to the file's own user."""
    records = open_records()
    header, user_state = next(records), next(records)
    assert isinstance(header, Header) and isinstance(user_state, UserState)
    target = user_id or header.user_id
    names: Renaming | None = None
    if target != header.user_id:
        nodes = (r.stored.node for r in open_records() if isinstance(r, NodeRecord))
        names = renaming(nodes, header.user_id, target)
    state = _state(user_state.state, target, names)
    result = Imported(target, not_reproduced=names.not_reproduced if names else 0)
    head = _head(records, page)
    if await has_memory(store, target):
        if replace:
            await store.delete_user(target)
            await index.delete_user(target)
            result.replaced = True
        elif await _holds(store, target, state, head, names):
            result.repeated = True
        else:
            raise UserHasMemory(target)
    await store.open_data_key(target)  # the index seals the user's words under it
    writer = _Writer(store, index, embedder, target, state, user_state.due, result)
    for record in itertools.chain(head, records):
        if on_record is not None:
            on_record(record)
        if isinstance(record, Expiry):
            writer.expiring[record.event_id] = record.at
        elif isinstance(record, NodeRecord):
            node, said = record.stored.node, record.knowledge
            if names is not None:
                node = names.node(node)
                said = names.knowledge(said) if said is not None else None
            writer.add(StoredNode(node, record.stored.fingerprint), said)
            if (
                node.derivation is not None
                and embedder_id
                and node.derivation.embedder != embedder_id
            ):
                result.other_embedder += 1
        else:
            continue
        if writer.pending >= page:
            await writer.flush()
    await writer.flush(last=True)
    return result


def _head(records: Iterator[Record], page: int) -> list[Record]:
    """The records up to the file's `page`-th node (or all of them)."""
    head: list[Record] = []
    nodes = 0
    for record in records:
        head.append(record)
        nodes += isinstance(record, NodeRecord)
        if nodes == page:
            break
    return head


async def _holds(
    store: BackupStore,
    user_id: str,
    state: Mapping[str, Any],
    head: list[Record],
    names: Renaming | None,
) -> bool:
    """Whether the user's memory is this file's (imported before, perhaps cut short): its
    window state is the file's, and of the file's first L1s (committed with that state) it
    holds some, each at the file's version. A user at the same point of the same
    conversation with another tree (other ids, other versions) is not."""
    if await store.load_state(user_id) != state:
        return False
    leaves = [
        r.stored.node
        for r in head
        if isinstance(r, NodeRecord) and r.stored.node.level == Level.SEGMENT
    ]
    if names is not None:
        leaves = [names.node(n) for n in leaves]
    if not leaves:
        return True
    versions = {n.id: n.version for n in leaves}
    stored = await store.stored_nodes(user_id, list(versions))
    return bool(stored) and all(versions[s.node.id] == s.node.version for s in stored)


def _state(state: Mapping[str, Any] | None, user_id: str, names: Renaming | None) -> dict[str, Any]:
    if state is None:
        return encode_state(UserWindows(user_id, DEFAULT_TZ))
    return names.state(state) if names is not None else dict(state)


@dataclass
class _Writer:
    """A page of records held until written: leaves with their knowledge, summaries with
    their fingerprints, deadlines."""

    store: BackupStore
    index: VectorIndex
    embedder: Embedder
    user_id: str
    state: dict[str, Any]
    due: datetime | None
    result: Imported
    leaves: list[MemoryNode] = field(default_factory=list)
    said: dict[str, LeafKnowledge] = field(default_factory=dict)
    summaries: list[StoredNode] = field(default_factory=list)
    expiring: dict[str, datetime] = field(default_factory=dict)
    committed_state: bool = False

    @property
    def pending(self) -> int:
        return len(self.leaves) + len(self.summaries) + len(self.expiring)

    def add(self, stored: StoredNode, said: LeafKnowledge | None) -> None:
        if stored.node.level == Level.SEGMENT:
            self.leaves.append(stored.node)
            if said is not None:
                self.said[stored.node.id] = said
        else:
            self.summaries.append(stored)

    async def flush(self, *, last: bool = False) -> None:
        """Index the page, then commit it (as the workers do: a commit names only indexed
        nodes). The state is committed with the first page, or alone at the end."""
        if self.leaves or self.expiring or (last and not self.committed_state):
            await self._commit_leaves()
        if self.summaries:
            await self.index.upsert(await indexed(self.embedder, [s.node for s in self.summaries]))
            await self.store.commit_nodes(self.user_id, self.summaries, outbox=[])
            self.result.nodes += len(self.summaries)
            self.summaries = []

    def _messages(self) -> list[str]:
        """The messages this commit holds, marked seen (mark 0: no content compared) so a
        producer sending them again after the import adds nothing; with the first commit,
        the turn the state holds waiting for its reply."""
        held = [m for leaf in self.leaves for m in leaf.source_ids]
        if not self.committed_state:
            held += [str(turn["event_id"]) for turn in self.state.get("pending", ())]
        return held

    async def _commit_leaves(self) -> None:
        if self.leaves:
            await self.index.upsert(await indexed(self.embedder, self.leaves))
        commit = UserCommit(
            user_id=self.user_id,
            state=self.state,
            seen={m: 0 for m in self._messages()},
            nodes=tuple(self.leaves),
            due=self.due,
            expiring=dict(self.expiring),
            # Nothing of these leaves is stored yet (or it is this very value): none to clear.
            knowledge=KnowledgeChange(dict(self.said), first_written=frozenset(self.said)),
        )
        await self.store.commit_user(commit)
        self.committed_state = True
        self.result.nodes += len(self.leaves)
        self.result.facts += sum(len(k.facts) for k in self.said.values())
        self.result.expiries += len(self.expiring)
        self.leaves, self.said, self.expiring = [], {}, {}
