"""Read-your-writes: wait until the segmenter has committed past the records a read names.

A read that passes write tokens (`domain.write_token`) waits, up to its deadline, for the
segmenter's progress mark of each token's partition to pass the token's offset; the mark is
written only after the records before it are in the tree, so once it passes, the read sees
them. A read that arrives after the write costs one small hash read. Reads that have to
wait share one poll per process: a single loop reads the marks of every partition they
wait on, with a pause growing from 5 ms to 50 ms (back to 5 ms when a read joins), and
wakes each read whose marks have passed or whose deadline has come. However many reads
wait, Redis sees at most one read per pause from this process. When the segmenter runs in
this process too (`memstream up`), it calls `progressed(marks)` after each mark it writes,
with the marks: the reads they pass answer at once, with no read of Redis, and a read of a
partition marked here waits for the next announcement without reading the marks first. From
the first such call on, the poll pauses the longest time between reads, a fallback for
partitions marked elsewhere (another process took the partition over).

Past the mark, a user's message can still be held by the window state, waiting for the reply
it would be written with (the exchange rule): the read is then reported pending with reason
`awaiting_reply` and the held event ids (publish with `flush` to write it at once). A turn
can also be held for one of its session with an earlier `seq` that has not arrived
(`domain.reorder`): reason `awaiting_earlier_seq`, which a producer's missing or
out-of-order `seq` causes, and which takes precedence.

With a turns topic per tenant (`contracts.tenant_topics`) the marks are per topic and
partition: the waiter is given the same tenants as the producers (`marked_topic`, the
user's topic as the marks name it), the edge checks that each token names that topic
(`domain.write_token`: a token of another topic is refused, never compared with this one's
marks), and a read waits on the marks of its user's topic. The shared topic's marks are
those of every deployment without the mode.

With tenant shares on (`segmenter.fair_share`), the mark passes a record the segmenter sent
to the overflow topic before it is in the tree: the read then also waits until the user's
overflow ledger holds nothing at or before the record (polled like the marks, up to the
same deadline; `not_yet_processed` if it runs out).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Literal

from memstream.domain.fair_share import waits_on
from memstream.domain.write_token import WritePosition
from memstream.ports import OverflowReads, ProgressReads

PendingReason = Literal["not_yet_processed", "awaiting_reply", "awaiting_earlier_seq"]
FIRST_PAUSE_S = 0.005
LONGEST_PAUSE_S = 0.05
# A turns topic's partition, as the marks are kept: (topic, partition), topic None for the
# shared turns topic (`ports.ProgressReads`).
Marked = tuple[str | None, int]


@dataclass(frozen=True, slots=True)
class WriteStatus:
    """Whether a read may miss some of the writes it named, and why."""

    pending: bool = False
    reason: PendingReason | None = None
    held: tuple[str, ...] = ()  # event ids the window state holds back
    waited_ms: float = 0.0  # from the first check to the answer


@dataclass(eq=False)
class _Waiting:
    """One read waiting: its positions, its deadline, and what the poll tells it (True: past
    every position; False: the deadline came first)."""

    positions: Sequence[WritePosition]
    deadline: float
    outcome: asyncio.Future[bool] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class WriteWaiter:
    def __init__(
        self,
        reads: ProgressReads,
        *,
        overflow: OverflowReads | None = None,
        marked_topic: Callable[[str], str | None] = lambda _user: None,
        monotonic: Callable[[], float] = time.monotonic,
        pause: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        """`overflow`: the segmenter's overflow ledger, when tenant shares are on.
        `marked_topic`: a user's turns topic when it is a tenant's (`TurnsRouting.marked_topic`),
        None when it is the shared one."""
        self._reads = reads
        self._overflow = overflow
        self.marked_topic = marked_topic
        self._monotonic = monotonic
        self._pause = pause
        self._waiting: set[_Waiting] = set()
        self._joined = False  # a read joined since the last poll: poll again soon
        self._poll: asyncio.Task[None] | None = None
        self._marked_here = False  # this process's segmenter announces its marks
        self._woken = asyncio.Event()  # a mark was announced since the last poll
        self._announced: dict[Marked, int] = {}  # the marks this process's segmenter wrote

    def progressed(self, marks: Mapping[int, int] | None = None, topic: str | None = None) -> None:
        """The segmenter of this process has just marked its progress in `topic` (None: the
        shared turns topic): the reads `marks` pass answer now (without `marks`, the poll
        reads them at once)."""
        self._marked_here = True
        if marks is None:
            self._woken.set()
            return
        # Overwritten, as the marks in Redis are (docs/read-your-writes.md says why).
        self._announced.update({(topic, p): o for p, o in marks.items()})
        for w in list(self._waiting):
            if _past(self._announced, w.positions):
                self._tell(w, True)

    async def wait(
        self, user_id: str, positions: Sequence[WritePosition], timeout_s: float
    ) -> WriteStatus:
        """Once the segmenter is past every position (or the deadline came first), what a
        read of `user_id` may still miss."""
        if not positions:
            return WriteStatus()
        started = self._monotonic()
        deadline = started + timeout_s
        if not _past(self._announced, positions):
            marks = await self._marks(positions)
            if not _past(marks, positions) and not await self._polled(positions, deadline):
                return WriteStatus(True, "not_yet_processed", waited_ms=self._ms_since(started))
        if not await self._out_of_overflow(user_id, positions, deadline):
            return WriteStatus(True, "not_yet_processed", waited_ms=self._ms_since(started))
        held = await self._reads.held_messages(user_id)
        waited_ms = self._ms_since(started)
        if held.awaiting_earlier_seq:
            ids = held.awaiting_earlier_seq + held.awaiting_reply
            return WriteStatus(True, "awaiting_earlier_seq", ids, waited_ms)
        if held.awaiting_reply:
            return WriteStatus(True, "awaiting_reply", held.awaiting_reply, waited_ms)
        return WriteStatus(waited_ms=waited_ms)

    async def _marks(self, positions: Sequence[WritePosition]) -> dict[Marked, int]:
        """The marks of the positions' partitions: the ones announced, when this process
        marks them all (the next announcement wakes the read), else from Redis."""
        if all(_marked(p) in self._announced for p in positions):
            return self._announced
        marks = await self._read_marks(positions)
        # A mark announced while Redis answered is this process's latest write.
        return marks | self._announced

    async def _read_marks(self, positions: Iterable[WritePosition]) -> dict[Marked, int]:
        """The marks of the positions' partitions in Redis: one read a turns topic (one in
        all without topics per tenant)."""
        asked = sorted({_marked(p) for p in positions}, key=_in_order)
        marks: dict[Marked, int] = {}
        for topic, of_topic in groupby(asked, key=lambda m: m[0]):
            read = await self._reads.progress([p for _, p in of_topic], topic)
            marks.update({(topic, p): o for p, o in read.items()})
        return marks

    async def _out_of_overflow(
        self, user_id: str, positions: Sequence[WritePosition], deadline: float
    ) -> bool:
        """Whether, before the deadline, none of `positions` waits in the overflow topic."""
        if self._overflow is None:
            return True
        pause = FIRST_PAUSE_S
        while True:
            diverted = await self._overflow.diverted(user_id)
            if not any(waits_on(diverted, p.partition, p.offset) for p in positions):
                return True
            left = deadline - self._monotonic()
            if left <= 0:
                return False
            await self._pause(min(pause, left))
            pause = min(pause * 2, LONGEST_PAUSE_S)

    def _ms_since(self, started: float) -> float:
        return round((self._monotonic() - started) * 1000, 3)

    async def _polled(self, positions: Sequence[WritePosition], deadline: float) -> bool:
        """Wait with the shared poll; whether the marks passed before the deadline."""
        waiting = _Waiting(positions, deadline)
        self._waiting.add(waiting)
        self._joined = True
        if self._poll is None or self._poll.done():
            self._poll = asyncio.create_task(self._poll_while_waited())
        try:
            return await waiting.outcome
        finally:
            self._waiting.discard(waiting)
            waiting.outcome.cancel()  # a read cancelled mid-wait: nothing left to tell it

    async def _poll_while_waited(self) -> None:
        try:
            await self._poll_loop()
        finally:
            # Stopped (cancelled at shutdown): no read is left waiting for a poll that is gone.
            for w in list(self._waiting):
                self._tell(w, RuntimeError("the poll of the segmenter's progress stopped"))

    async def _poll_loop(self) -> None:
        pause = FIRST_PAUSE_S
        while self._waiting:
            if self._joined:
                pause, self._joined = FIRST_PAUSE_S, False
            if self._marked_here:
                pause = LONGEST_PAUSE_S  # the marks of this process wake the poll themselves
            earliest = min(w.deadline for w in self._waiting)
            await self._pause_unless_woken(max(0.0, min(pause, earliest - self._monotonic())))
            pause = min(pause * 2, LONGEST_PAUSE_S)
            waiting = list(self._waiting)
            if not waiting:
                return
            try:
                marks = await self._read_marks(p for w in waiting for p in w.positions)
            except Exception as error:  # the store failed: every read waiting answers with it
                for w in waiting:
                    self._tell(w, error)
                return
            now = self._monotonic()
            for w in waiting:
                if _past(marks, w.positions):
                    self._tell(w, True)
                elif now >= w.deadline:
                    self._tell(w, False)

    async def _pause_unless_woken(self, seconds: float) -> None:
        """The pause, cut short by `progressed()` (a mark announced before it began counts)."""
        if not self._woken.is_set():
            paused = asyncio.ensure_future(self._pause(seconds))
            woken = asyncio.ensure_future(self._woken.wait())
            try:
                await asyncio.wait((paused, woken), return_when=asyncio.FIRST_COMPLETED)
            finally:
                paused.cancel()
                woken.cancel()
        self._woken.clear()

    def _tell(self, waiting: _Waiting, outcome: bool | Exception) -> None:
        """Answer a read; it no longer waits (even before it resumes to see the answer)."""
        self._waiting.discard(waiting)
        if waiting.outcome.done():  # cancelled meanwhile
            return
        if isinstance(outcome, Exception):
            waiting.outcome.set_exception(outcome)
        else:
            waiting.outcome.set_result(outcome)


def _marked(position: WritePosition) -> Marked:
    return (position.topic, position.partition)


def _in_order(marked: Marked) -> tuple[str, int]:
    """The shared topic's first, then each tenant's, by partition."""
    return (marked[0] or "", marked[1])


def _past(marks: Mapping[Marked, int], positions: Sequence[WritePosition]) -> bool:
    return all(marks.get(_marked(p), 0) > p.offset for p in positions)
