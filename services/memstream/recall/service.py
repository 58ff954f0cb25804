"""What the HTTP API does besides recall: browse a user's tree, show a memory, forget a user.

Routes call these methods and encode what they return; nothing here knows about HTTP.

- Memories are listed level by level (L1 first, or only the requested level), each level
  in order of `t_end`, `start`/`end` bounding `t_end`. The cursor is opaque to clients: it
  holds the level and the offset within it. Offsets are stable while memories are appended
  (new memories end later, so they sort last); a late memory inserted mid-level may shift
  one page by one item, which a browsing client can live with.
- Node keys in Redis are per user (`{user_id}` hash tag), so looking a memory up by id
  needs its user: the API takes `user_id` as a required query parameter rather than keeping
  a global id -> user index, which would be one more key to forget and a cross-slot write.
- Forgetting messages only publishes `forget.v1` with their ids; it is done once the
  segmenter has recorded their tombstones and no node of the user cites them any more.
- Forgetting a user deletes from Qdrant and Redis first, so the answer reports what was there,
  then publishes `forget.v1` on the turns topic (keyed by user), so the segmenter drops its
  in-flight state and deletes again whatever a worker wrote meanwhile.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime

from memstream.contracts.codec import encode_forget, encode_rebuild
from memstream.contracts.records import Outbound
from memstream.contracts.tenant_topics import TurnsTopic, topic_of
from memstream.domain.models import Level, MemoryNode
from memstream.ports import NodeReader, Publisher, RecallReads
from memstream.recall.rebuilds import RebuildProgress, has_memories, rebuild_progress

# The tree has five levels; ancestors beyond that would mean a cycle in the links.
MAX_DEPTH = len(Level)
# No user has a billion memories on one level; a larger offset was not issued by us.
MAX_CURSOR_OFFSET = 10**9
_LEVELS = frozenset(int(level) for level in Level)


class InvalidCursor(ValueError):
    """The cursor was not issued by this API (or was altered)."""


class ForgetNotPublished(RuntimeError):
    """The stores were cleared but `forget.v1` could not be published; retrying is safe."""

    def __init__(self, removed: dict[str, int]) -> None:
        super().__init__("stores cleared, but the forget event could not be published")
        self.removed = removed


class NothingToRebuild(LookupError):
    """The user has no memories: a rebuild would have nothing to re-derive, and the segmenter
    passes over a command for a user it holds no state for (the job would never start)."""


@dataclass(frozen=True, slots=True)
class Cursor:
    level: Level
    offset: int

    def encode(self) -> str:
        raw = json.dumps({"l": int(self.level), "o": self.offset}, separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> Cursor:
        """The cursor `text` encodes; InvalidCursor for anything `encode` could not have made."""
        try:
            padded = text + "=" * (-len(text) % 4)
            doc = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        except (ValueError, binascii.Error, UnicodeError, RecursionError) as exc:
            raise InvalidCursor("cursor is not one this API issued") from exc
        if not isinstance(doc, dict) or set(doc) != {"l", "o"}:
            raise InvalidCursor("cursor is not one this API issued")
        level, offset = doc["l"], doc["o"]
        # Exact ints only: a float, bool or huge offset would reach the store as an error.
        if not all(type(v) is int for v in (level, offset)) or level not in _LEVELS:
            raise InvalidCursor("cursor is not one this API issued")
        if not 0 <= offset <= MAX_CURSOR_OFFSET:
            raise InvalidCursor("cursor is not one this API issued")
        return cls(Level(level), offset)


@dataclass(frozen=True, slots=True)
class Page:
    items: list[MemoryNode]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class MemoryDetail:
    node: MemoryNode
    children: list[MemoryNode]
    ancestors: list[MemoryNode]  # parent first, up to the profile


@dataclass(frozen=True, slots=True)
class ForgetReport:
    qdrant_points: int
    redis_keys: int
    event_published: bool


class MemoryService:
    def __init__(
        self,
        *,
        tree: RecallReads,
        forget_user: Callable[[str], Awaitable[dict[str, int]]],
        publisher: Publisher,
        turns_topic: TurnsTopic,
    ) -> None:
        self._tree = tree
        self._forget_user = forget_user
        self._publisher = publisher
        self._turns_topic = topic_of(turns_topic)

    async def profile(self, user_id: str) -> MemoryNode | None:
        node = await self._tree.profile(user_id)
        return node if node is not None and node.user_id == user_id else None

    async def list_memories(
        self,
        user_id: str,
        *,
        level: Level | None,
        start: datetime | None,
        end: datetime | None,
        limit: int,
        cursor: str | None,
    ) -> Page:
        if limit <= 0:
            raise ValueError("limit must be positive")
        levels: Sequence[Level] = [level] if level is not None else list(Level)
        at = Cursor.decode(cursor) if cursor else Cursor(levels[0], 0)
        if at.level not in levels:
            raise InvalidCursor("cursor belongs to another level filter")
        low = start.timestamp() if start else float("-inf")
        high = end.timestamp() if end else float("inf")
        items: list[MemoryNode] = []
        position = levels.index(at.level)
        offset = at.offset
        while position < len(levels):
            current = levels[position]
            want = limit - len(items)
            # One id beyond what fits tells whether this level has more.
            ids = await self._tree.level_ids(user_id, current, low, high, offset, want + 1)
            items += await self._tree.get_many(user_id, ids[:want])
            if len(ids) > want:
                return Page(items, Cursor(current, offset + want).encode())
            position, offset = position + 1, 0
            if len(items) == limit:
                more = position < len(levels)
                return Page(items, Cursor(levels[position], 0).encode() if more else None)
        return Page(items, None)

    async def memory(self, user_id: str, node_id: str) -> MemoryDetail | None:
        stored = await self._tree.get(user_id, node_id)
        if stored is None or stored.node.user_id != user_id:
            return None
        node = stored.node
        children = await self._tree.get_many(
            user_id, await self._tree.children_ids(user_id, node_id)
        )
        ancestors: list[MemoryNode] = []
        parent_id = node.parent_id
        while parent_id is not None and len(ancestors) < MAX_DEPTH:
            found = await self._tree.get_many(user_id, [parent_id])
            if not found:
                break  # the parent's window is still open: not written yet
            ancestors.append(found[0])
            parent_id = found[0].parent_id
        children.sort(key=lambda c: (c.t_start, c.id))
        return MemoryDetail(node, children, ancestors)

    async def forget_messages(self, user_id: str, message_ids: Sequence[str]) -> None:
        """Publish `forget.v1` naming the messages; the segmenter (the one writer of the
        user's tree) removes them and has their ancestors consolidated again."""
        event = Outbound(self._turns_topic(user_id), user_id, encode_forget(user_id, message_ids))
        await self._publisher.publish([event])

    async def message_forgotten(self, user_id: str, message_id: str) -> bool:
        """Whether forgetting the message is done: the segmenter has recorded its tombstone
        and no node of the user, at any level, still cites it (read from the tree store;
        the index is written before the store at every step, so it is done too). The L1s,
        most of the nodes, are asked through their message index; above them, the nodes its
        forget recorded and their ancestors (a node cites a message only through a leaf
        below it, or a later profile, which the forget records too)."""
        [held] = await self._tree.forgotten_messages(user_id, [message_id])
        if not held or await self._tree.leaves_citing(user_id, [message_id]):
            return False
        reaches = await self._tree.forget_reaches(user_id, message_id)
        if reaches is not None:
            return not await _cited_above(self._tree, user_id, message_id, reaches)
        # A tombstone written before the forgets kept their record: every summary is read.
        for level in Level:
            if level == Level.SEGMENT:
                continue
            offset = 0
            while ids := await self._tree.level_ids(user_id, level, offset=offset, limit=500):
                offset += len(ids)
                for node in await self._tree.get_many(user_id, ids):
                    if _cites(node, message_id):
                        return False
        return True

    async def rebuild(
        self,
        user_id: str,
        since: date | None = None,
        levels: Sequence[int] | None = None,
        rebuild_id: str | None = None,
    ) -> str:
        """Publish `rebuild.v1` for the user (the segmenter re-derives its tree from the
        stored messages, in order with its turns); returns the rebuild's id.
        NothingToRebuild when the user has no memory (an unknown id, or a lost tree: see
        `memstream repair`)."""
        if not await has_memories(self._tree, user_id):
            raise NothingToRebuild(user_id)
        rebuild_id = rebuild_id or uuid.uuid4().hex
        value = encode_rebuild(user_id, rebuild_id, since, levels)
        await self._publisher.publish([Outbound(self._turns_topic(user_id), user_id, value)])
        return rebuild_id

    async def rebuild_progress(self, user_id: str, rebuild_id: str) -> RebuildProgress:
        return await rebuild_progress(self._tree, user_id, rebuild_id)

    async def forget(self, user_id: str) -> ForgetReport:
        removed = await self._forget_user(user_id)
        event = Outbound(self._turns_topic(user_id), user_id, encode_forget(user_id))
        try:
            await self._publisher.publish([event])
        except Exception as exc:
            raise ForgetNotPublished(removed) from exc
        return ForgetReport(
            qdrant_points=removed.get("qdrant_points", 0),
            redis_keys=removed.get("redis_keys", 0),
            event_published=True,
        )


async def _cited_above(tree: NodeReader, user_id: str, message_id: str, start: list[str]) -> bool:
    """Whether a node among `start` or above them cites the message: one read per level."""
    seen: set[str] = set()
    ids = set(start)
    while ids:
        seen |= ids
        nodes = await tree.get_many(user_id, sorted(ids))
        if any(_cites(node, message_id) for node in nodes):
            return True
        ids = {n.parent_id for n in nodes if n.parent_id} - seen
    return False


def _cites(node: MemoryNode, message_id: str) -> bool:
    return message_id in node.source_ids or any(message_id in f.source_ids for f in node.facts)
