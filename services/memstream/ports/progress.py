"""How far the segmenter has committed in the turns log: what read-your-writes waits on.

The segmenter marks, per partition of the turns topic, the next offset it has yet to handle,
once everything before it is committed to the tree (`ProgressMarks`); a read holding a write
token asks whether the segmenter is past it, and which messages of the user the window state
still holds back waiting for their reply (`ProgressReads`).

With a turns topic per tenant (`contracts.tenant_topics`) the same partition number is in
several topics, so the marks are per topic and partition: `topic` names a tenant's turns
topic, None the shared one (whose marks keep the layout they had before the mode existed).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Protocol

from memstream.domain.write_token import HeldMessages


class ProgressMarks(Protocol):
    async def mark_progress(
        self, next_offsets: Mapping[int, int], topic: str | None = None
    ) -> None:
        """Record, per partition of `topic`, the offset after the last record committed;
        called only once those records' writes are in the tree, so a mark is never ahead of
        it."""
        ...


class ProgressReads(Protocol):
    async def progress(self, partitions: Sequence[int], topic: str | None = None) -> dict[int, int]:
        """Per partition of `topic` asked, the next offset the segmenter has yet to handle
        (absent: nothing marked yet)."""
        ...

    async def held_messages(self, user_id: str) -> HeldMessages:
        """Event ids of the user's messages the window state holds, not yet in a memory."""
        ...


class OverflowLedger(Protocol):
    """Which of a user's turns-log records wait in the overflow topic (`domain.fair_share`):
    written in the user's slot, so it works on Redis Cluster too."""

    async def held(self, user_ids: Collection[str]) -> set[str]:
        """The users among `user_ids` with records still in the overflow."""
        ...

    async def divert(self, positions: Mapping[str, Sequence[tuple[int, int]]]) -> None:
        """Record, per user, the (partition, offset) of records sent to the overflow: before
        they are sent, so a record in the overflow is always on the ledger."""
        ...

    async def release(self, positions: Mapping[str, Sequence[tuple[int, int]]]) -> None:
        """Strike records off once the segmenter has handled them from the overflow."""
        ...


class OverflowQueues(Protocol):
    """Which overflow partition (queue) each tenant's diverted records go to: chosen once,
    by the first worker that diverts the tenant (`domain.fair_share.queue_for`), and kept,
    so every worker sends a tenant's records, in order, to the same queue."""

    async def overflow_queues(self, tenants: Collection[str], partitions: int) -> dict[str, int]:
        """The queue of each of `tenants`, choosing one for those that have none yet."""
        ...


class OverflowReads(Protocol):
    async def diverted(self, user_id: str) -> list[tuple[int, int]]:
        """The (partition, offset) of the user's records still in the overflow."""
        ...
