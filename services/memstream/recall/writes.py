"""Read-your-writes: wait until the segmenter has committed past the records a read names.

A read that passes write tokens (`domain.write_token`) waits, up to its deadline, for the
segmenter's progress mark of each token's partition to pass the token's offset; the mark is
written only after the records before it are in the tree, so once it passes, the read sees
them. It polls Redis (one small hash read) with a growing pause, so a read that arrives
after the write costs one read and one that waits costs a few per second at most.

Past the mark, a user's message can still be held by the window state, waiting for the reply
it would be written with (the exchange rule): the read is then reported pending with reason
`awaiting_reply` and the held event ids (publish with `flush` to write it at once).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from memstream.domain.write_token import WritePosition
from memstream.ports import ProgressReads

PendingReason = Literal["not_yet_processed", "awaiting_reply"]
FIRST_PAUSE_S = 0.002
LONGEST_PAUSE_S = 0.05


@dataclass(frozen=True, slots=True)
class WriteStatus:
    """Whether a read may miss some of the writes it named, and why."""

    pending: bool = False
    reason: PendingReason | None = None
    held: tuple[str, ...] = ()  # event ids the window state holds back (awaiting_reply)
    waited_ms: float = 0.0  # from the first check to the answer


class WriteWaiter:
    def __init__(
        self,
        reads: ProgressReads,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        pause: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._reads = reads
        self._monotonic = monotonic
        self._pause = pause

    async def wait(
        self, user_id: str, positions: Sequence[WritePosition], timeout_s: float
    ) -> WriteStatus:
        """Once the segmenter is past every position (or the deadline came first), what a
        read of `user_id` may still miss."""
        if not positions:
            return WriteStatus()
        started = self._monotonic()
        deadline = started + timeout_s
        pause = FIRST_PAUSE_S
        while not await self._past(positions):
            left = deadline - self._monotonic()
            if left <= 0:
                return WriteStatus(True, "not_yet_processed", waited_ms=self._ms_since(started))
            await self._pause(min(pause, left))
            pause = min(pause * 2, LONGEST_PAUSE_S)
        held = tuple(await self._reads.held_messages(user_id))
        waited_ms = self._ms_since(started)
        if held:
            return WriteStatus(True, "awaiting_reply", held, waited_ms)
        return WriteStatus(waited_ms=waited_ms)

    def _ms_since(self, started: float) -> float:
        return round((self._monotonic() - started) * 1000, 3)

    async def _past(self, positions: Sequence[WritePosition]) -> bool:
        marks = await self._reads.progress([p.partition for p in positions])
        return all(marks.get(p.partition, 0) > p.offset for p in positions)
