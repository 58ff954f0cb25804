"""How far the segmenter has committed in the turns log: what read-your-writes waits on.

The segmenter marks, per partition of the turns topic, the next offset it has yet to handle,
once everything before it is committed to the tree (`ProgressMarks`); a read holding a write
token asks whether the segmenter is past it, and which messages of the user the window state
still holds back waiting for their reply (`ProgressReads`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from memstream.domain.write_token import HeldMessages


class ProgressMarks(Protocol):
    async def mark_progress(self, next_offsets: Mapping[int, int]) -> None:
        """Record, per partition, the offset after the last record committed; called only
        once those records' writes are in the tree, so a mark is never ahead of it."""
        ...


class ProgressReads(Protocol):
    async def progress(self, partitions: Sequence[int]) -> dict[int, int]:
        """Per partition asked, the next offset the segmenter has yet to handle (absent:
        nothing marked yet)."""
        ...

    async def held_messages(self, user_id: str) -> HeldMessages:
        """Event ids of the user's messages the window state holds, not yet in a memory."""
        ...
