"""What memstream asks of the tree store, one protocol per role.

The tree store holds the tree's structure, the segmenter's window state, idempotency
markers, outboxes and the indexes across users. Each caller is typed with the role it plays:

    NodeReader        the tree's nodes, read (recall, the consolidator, the segmenter)
    MessageIndex      which L1s cite a message, which messages are forgotten
    Outboxes          events a handler committed but has not published yet
    SegmenterStore    the segmenter's step: load a `UserSnapshot`, commit a `UserCommit`
    ConsolidatorStore the consolidator's batch: load its users, read the tree, commit nodes
    DueIndex          who the clock must tick (and nodes the offline fallback wrote)
    RebuildQueue      rebuild jobs and the users whose rebuild may take its next chunk
    Forgetting        a user's tombstone, and forgetting a user for good
    UserDirectory     the users registry and a user's overview (`ports.users`)
    TreeStore         all of them, and the knowledge the segmenter commits with the L1s
                      (`ports.knowledge`: KnowledgeReads, ProfileFacts): what the
                      composition root builds

Every write of one user that must hold together (`commit_user`, `commit_nodes`) is one
transaction. `tests/integration/tree_contract.py` holds every implementation to this.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from memstream.domain.forgetting import Forgotten, Guard, Tombstone
from memstream.domain.knowledge import KnowledgeChange
from memstream.domain.models import Level, MemoryNode, StoredNode
from memstream.domain.rebuild import RebuildJob
from memstream.domain.remembered import Lookup, Remembered, RememberedChanges
from memstream.domain.step import UserSnapshot
from memstream.ports.knowledge import KnowledgeReads, LeafFacts, ProfileFacts
from memstream.ports.progress import ProgressMarks, ProgressReads
from memstream.ports.users import UserDirectory

# Each handler relays its own outbox: the segmenter and the consolidator of one user run in
# different processes, and one shared list would let each trim what the other published.
OutboxName = Literal["segmenter", "consolidator"]


@dataclass(frozen=True, slots=True)
class UserCommit:
    """The segmenter's write for one user, as one value.

    The window `state` (as the codec encodes it), the `seen` markers (event id -> content
    mark, 0: none given), the L1 `nodes`, the `outbox` events and the user's `due` time;
    `removed` nodes go (their links and indexes too) and `forgotten` event ids get a message
    tombstone (kept as long as the seen markers) and leave the expiry schedule; `expiring`
    event ids join it with their deadlines. Each L1 written indexes its messages
    (`leaves_citing`). `rebuild` is the user's rebuild job as this write leaves it (listed as
    due for its next chunk while unfinished). `knowledge` is what the L1s written say (their
    facts and entity surfaces, replacing what they said before) and which L1s' knowledge
    goes (`domain.knowledge`). With a `guard`, written only if the user's tombstone is still
    the guard's (checked inside the transaction). `remembered` is what the step writes of
    the closed sessions and window keys kept apart from the state (`domain.remembered`).
    `forget_reaches`: the nodes above the leaves the `forgotten` messages were in, kept with
    their tombstones (`MessageIndex.forget_reaches`).
    """

    user_id: str
    state: Mapping[str, Any]
    seen: Mapping[str, int] = field(default_factory=dict)
    nodes: Sequence[MemoryNode] = ()
    outbox: Sequence[Mapping[str, Any]] = ()
    due: datetime | None = None
    guard: Guard | None = None
    removed: Sequence[MemoryNode] = ()
    # Stored nodes written again (among `nodes`) under another parent, as they were stored:
    # their old parent's link goes.
    moved: Sequence[MemoryNode] = ()
    forgotten: Sequence[str] = ()
    expiring: Mapping[str, datetime] = field(default_factory=dict)
    rebuild: RebuildJob | None = None
    knowledge: KnowledgeChange = field(default_factory=KnowledgeChange)
    remembered: RememberedChanges = field(default_factory=RememberedChanges)
    forget_reaches: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class ConsolidatorSnapshot:
    """What a consolidation batch reads of each of its users before anything else: the
    user's tombstone (its commits' guard) and the outbox a crash left, oldest first."""

    tombstone: Tombstone | None
    outbox: tuple[dict[str, Any], ...] = ()


class NodeReader(Protocol):
    async def get(self, user_id: str, node_id: str) -> StoredNode | None: ...

    async def get_many(self, user_id: str, node_ids: Sequence[str]) -> list[MemoryNode]:
        """The nodes that exist among `node_ids`, in the given order."""
        ...

    async def get_with_ancestors(self, user_id: str, node_ids: Sequence[str]) -> list[MemoryNode]:
        """The nodes that exist among `node_ids` and every ancestor of theirs (by
        `parent_id`), each once, the nodes asked for first; all read by this call."""
        ...

    async def session_terms(
        self, user_id: str, session_ids: Sequence[str]
    ) -> dict[str, frozenset[str]]:
        """`lexical.term_set` of the text of each session summary (L2) that exists among
        `session_ids`, by id; a store may keep them beside the nodes rather than read them."""
        ...

    async def children_ids(self, user_id: str, node_id: str) -> list[str]:
        """Ids of the nodes stored with `node_id` as parent, sorted."""
        ...

    async def recent(
        self, user_id: str, level: Level, count: int, before: datetime | None = None
    ) -> list[MemoryNode]:
        """The `count` newest nodes of a level (by end) ending before `before`, oldest first."""
        ...

    async def level_ids(
        self,
        user_id: str,
        level: Level,
        start: float = float("-inf"),
        end: float = float("inf"),
        offset: int = 0,
        limit: int = 100,
    ) -> list[str]:
        """Ids of a level whose end (epoch seconds) is in [start, end], by end then id."""
        ...

    async def count(self, user_id: str, level: Level) -> int: ...

    async def profile(self, user_id: str) -> MemoryNode | None:
        """The L5 node that ends last."""
        ...


class MessageIndex(Protocol):
    async def forgotten_messages(self, user_id: str, event_ids: Sequence[str]) -> list[bool]:
        """For each event id, whether a message tombstone holds it (a forgotten message)."""
        ...

    async def leaves_citing(self, user_id: str, message_ids: Sequence[str]) -> list[str]:
        """Ids of the L1s holding any of `message_ids`, sorted: read from an index kept with
        the L1s, so the cost follows the messages asked about, not the user's size."""
        ...

    async def forget_reaches(self, user_id: str, message_id: str) -> list[str] | None:
        """The nodes above the leaves a forgotten message was in, as its forget recorded
        them (`UserCommit.forget_reaches`); None: no record (no tombstone, or one written
        before the record was kept)."""
        ...


class Outboxes(Protocol):
    async def outbox(self, user_id: str, name: OutboxName) -> list[dict[str, Any]]:
        """Events committed but not yet published, oldest first."""
        ...

    async def clear_outbox(self, user_id: str, count: int, name: OutboxName) -> None:
        """Drop the `count` oldest events (those just published)."""
        ...

    async def clear_outboxes(self, counts: Mapping[str, int], name: OutboxName) -> None:
        """`clear_outbox` of each user in `counts` (user -> count), in one round trip."""
        ...


class RebuildQueue(Protocol):
    async def rebuild_job(self, user_id: str) -> RebuildJob | None:
        """The user's latest rebuild job (kept until the next replaces it or a forget)."""
        ...

    async def rebuild_windows(self, user_id: str) -> list[str]:
        """The ids of the windows the latest job consolidates again, bottom-up."""
        ...

    async def rebuilds_due(self, now: float, limit: int) -> list[str]:
        """Users whose unfinished rebuild may take its next chunk at `now` (epoch s)."""
        ...

    async def lease_rebuild(self, user_id: str, until: float) -> None:
        """Not due again before `until` (its next chunk was asked for), if still listed."""
        ...

    async def rebuilding_users(self, limit: int = 10_000) -> list[str]:
        """Users with a rebuild job not yet settled (finished or not)."""
        ...

    async def settle_rebuild(self, user_id: str, rebuild_id: str | None) -> bool:
        """Drop the user from the list if its job is still `rebuild_id` and finished (its
        windows seen consolidated), or if it has no job; atomically, so a new rebuild
        committed meanwhile stays listed. Returns whether it was dropped."""
        ...


class Tombstones(Protocol):
    async def tombstone(self, user_id: str) -> Tombstone | None:
        """The user's tombstone, while it lasts."""
        ...


class Forgetting(Tombstones, Protocol):
    async def forget(self, user_id: str, tombstone: Tombstone, ttl_s: int | None) -> Forgotten:
        """Delete every entry of the user and write the tombstone, in one transaction;
        without touching any other user's keys and without scanning the keyspace."""
        ...

    async def delete_user(self, user_id: str) -> int:
        """Forget everything of one user; returns how many entries went (0: none)."""
        ...


class RecallReads(NodeReader, MessageIndex, RebuildQueue, Protocol):
    """What the HTTP API and recall read: the tree, the message index, rebuild progress."""


class SegmenterStore(
    NodeReader, MessageIndex, Outboxes, Tombstones, ProgressMarks, LeafFacts, Protocol
):
    """The segmenter's step: one load, one commit (and the reads its LLM writes need)."""

    async def load_user(
        self, user_id: str, event_ids: Sequence[str], session_ids: Sequence[str] = ()
    ) -> UserSnapshot:
        """What one user's step needs, read together: its window state, tombstone, the
        seen marks and message tombstones of `event_ids`, its earliest message deadlines
        (`domain.step.EXPIRY_READ` of them) and its segmenter outbox; with the state's
        remembered sessions apart, those of `session_ids`, their count and the oldest few
        (`domain.remembered`; a store that keeps them in the state gives None)."""
        ...

    async def look_up(self, user_id: str, lookup: Lookup) -> Remembered:
        """More of the remembered sessions and window keys, as the decision asked."""
        ...

    async def commit_user(self, commit: UserCommit) -> bool:
        """Write `commit` in one transaction; returns whether it was written (a guard that
        no longer holds refuses it)."""
        ...

    async def load_state(self, user_id: str) -> dict[str, Any] | None: ...

    async def unseen(self, user_id: str, event_ids: Sequence[str]) -> list[bool]:
        """For each event id, whether it has not been committed as seen yet."""
        ...

    async def seen_marks(self, user_id: str, event_ids: Sequence[str]) -> list[int | None]:
        """For each event id, the content mark committed with it (0: none given), or None
        when it has not been seen. Markers last at least the input topic's retention."""
        ...

    async def expiries(self, user_id: str, limit: int = 100) -> list[tuple[str, float]]:
        """The user's `limit` earliest message deadlines: (event id, epoch seconds), earliest
        first (messages committed with a deadline and not forgotten since)."""
        ...

    async def rebuild_job(self, user_id: str) -> RebuildJob | None:
        """The user's latest rebuild job (kept until the next replaces it or a forget)."""
        ...

    async def rebuild_leaves(self, user_id: str, start: int, stop: int) -> list[str]:
        """The ids of the latest job's leaves from `start` to `stop` (excluded), in its order."""
        ...

    async def rebuild_windows(self, user_id: str) -> list[str]:
        """The ids of the windows the latest job consolidates again, bottom-up."""
        ...


class ConsolidatorStore(NodeReader, MessageIndex, Outboxes, Tombstones, Protocol):
    """The consolidator's batch: one load of its users, the tree read as closures need it
    (`consolidator.batch_view`), one commit per user; the message tombstones, for the nodes a
    forget re-closes."""

    async def load_users(self, user_ids: Sequence[str]) -> dict[str, ConsolidatorSnapshot]:
        """Each user's `ConsolidatorSnapshot`, read together."""
        ...

    async def commit_nodes(
        self,
        user_id: str,
        nodes: Sequence[StoredNode],
        outbox: Sequence[dict[str, Any]],
        guard: Guard | None = None,
        removed: Sequence[MemoryNode] = (),
    ) -> bool:
        """The consolidator's write: nodes with their fingerprints, and its outbox (with a
        `guard`, as in `commit_user`); `removed` nodes (left with no children) go; returns
        whether it was written."""
        ...


class DueIndex(NodeReader, Protocol):
    """What the clock reads across users (and the nodes it hands back to the consolidator)."""

    async def due_users(self, now: datetime, limit: int = 10_000) -> list[str]:
        """Users whose next due time is at or before `now`, earliest first."""
        ...

    async def degraded(self, limit: int = 1000) -> list[tuple[str, str]]:
        """Up to `limit` (user, node id) pairs of nodes the offline fallback wrote."""
        ...

    async def open_window_counts(self) -> Counter[int]:
        """Open windows per level, over every user with something due."""
        ...

    async def index_degraded_by_user(self) -> int:
        """Once per store: put the degraded nodes an older version marked only across
        users into each user's own index (what its overview counts); returns how many."""
        ...


class BacklogReads(DueIndex, RecallReads, Protocol):
    """What the backlog collector reads for its gauges: open windows and rebuilds left."""


class TreeStore(
    SegmenterStore,
    ConsolidatorStore,
    RecallReads,
    DueIndex,
    RebuildQueue,
    Forgetting,
    KnowledgeReads,
    ProfileFacts,
    ProgressReads,
    UserDirectory,
    Protocol,
):
    """Every role at once: what the composition root builds and hands out."""
