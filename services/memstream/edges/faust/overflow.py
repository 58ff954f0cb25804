"""The segmenter's overflow consumer: the records the main path diverted, read back from the
turns log at their places, taken only with the capacity the turns leave spare
(`spare.SpareCapacity`).

Not a Faust agent: Faust delivers every fetched record to its agent's stream buffer, and a
full buffer stops the fetcher of every topic, so an overflow that waits for spare capacity
would stall the turns it waits for. This is a consumer of its own (group
`<app id>-overflow`, started with the Faust app as its task).

The overflow topic holds places, not records (`contracts.turns_places`): one record names a
tenant's diverted records of one batch by their offsets in one partition of the turns log.
The consumer takes the records one partition's overflow records name in batches of at most
`batch_size` (a batch may end one record and begin the next: the handler's cost is mostly
per batch): it reads them back from the turns topic (`TurnsReader`, a consumer of no group
per partition), hands them to the handler the way an agent does (`consume_batch`: decoded
once, dead letters, retries), strikes their places off the ledger, and commits the offset
past each overflow record all of whose records are done. A crash in between reads a
record's records again; what was already written is dropped by the event-id dedup, as for
any replay. Each user's records are in one partition of the turns log, named in the order
of its overflow records, so each user's order is kept.

Each tenant's places go to a partition of its own (`ports.OverflowQueues`: the least taken
when the tenant is first diverted; shared only once every partition has a tenant), and the
batches take the partitions in turn (`next_places`): a tenant over its share for a moment
waits behind one batch of each other tenant's backlog, not behind the whole of a flood that
came first.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition

from memstream import faults
from memstream.contracts.records import RawEvent, at_origin
from memstream.contracts.turns_places import TurnsPlaces, decode_places
from memstream.edges.faust.spare import SpareCapacity

log = logging.getLogger(__name__)

FETCH_WAIT_MS = 500  # the longest one fetch waits for records before the loop looks again
# Records of other users the reader reads through to the next place rather than seek: a seek
# drops what was fetched ahead and waits for a fetch of its own.
READ_THROUGH = 512

# Each user's places in the turns log (partition, offset): what the overflow ledger holds.
Places = Mapping[str, Sequence[tuple[int, int]]]


@dataclass
class Backlog:
    """An overflow record being worked through: its own offset (committed once it is done),
    and the places it names that are still to be handled, in the turns log's order."""

    offset: int
    partition: int  # of the turns topic
    left: list[tuple[int, str]]  # (offset, user)

    def take(self, most: int) -> list[tuple[int, str]]:
        taken, self.left = self.left[:most], self.left[most:]
        return taken


# Per overflow partition, the records being worked through, oldest first.
Backlogs = dict[TopicPartition, deque[Backlog]]


@dataclass(frozen=True)
class OverflowConsumer:
    """`consume` (the agents' `consume_batch` with its handler and dead letters bound) fed
    with batches of at most `batch_size` records, read back from `turns_topic` at the places
    `topic` names, each once `spare` allows; `struck_off` then clears their places."""

    topic: str
    turns_topic: str
    bootstrap: str
    group: str
    consume: Callable[[list[RawEvent]], Awaitable[Any]]
    struck_off: Callable[[Places], Awaitable[None]]
    spare: SpareCapacity
    batch_size: int
    consumer_options: dict[str, Any]

    async def run(self) -> None:
        consumer = AIOKafkaConsumer(
            self.topic,
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            **self.consumer_options,
        )

        def turns_consumer() -> AIOKafkaConsumer:
            return AIOKafkaConsumer(
                bootstrap_servers=self.bootstrap,
                group_id=None,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
            )

        reader = TurnsReader(self.turns_topic, turns_consumer)
        await consumer.start()
        turn = 0  # the partition whose batch comes next, counted over the assigned ones
        backlogs: Backlogs = {}
        try:
            while True:
                await self.spare.turn()
                turn = await self.step(consumer, reader, turn, backlogs)
        finally:
            await asyncio.shield(reader.close())
            await asyncio.shield(consumer.stop())

    async def step(
        self, consumer: AIOKafkaConsumer, reader: TurnsReader, turn: int, backlogs: Backlogs
    ) -> int:
        """One batch: the next partition's (`next_places`) next records, up to
        `batch_size` of them from as many of its overflow records as it takes, read back,
        handled and struck off; then the offsets of the overflow records all of whose
        records are done are committed. Returns the next turn."""
        turn, tp = await self.next_places(consumer, turn, backlogs)
        if tp is None:
            return turn
        queue = backlogs[tp]
        taken: dict[int, list[tuple[int, str]]] = {}  # turns partition -> (offset, user)
        room, at = self.batch_size, 0
        while room:
            if at == len(queue):
                fetched = await consumer.getmany(tp, timeout_ms=0, max_records=1)
                if not fetched.get(tp):
                    break
                queue.append(_backlog(fetched[tp][0]))
            got = queue[at].take(room)
            room -= len(got)
            taken.setdefault(queue[at].partition, []).extend(got)
            at += 1 if not queue[at].left else 0
        if any(taken.values()):
            raws: list[RawEvent] = []
            for partition, places in taken.items():
                if places:
                    raws += await reader.read(partition, [offset for offset, _ in places])
            if raws:
                async with self.spare.overflow_handling():
                    await self.consume(raws)
            struck: dict[str, list[tuple[int, int]]] = {}
            for partition, places in taken.items():
                for offset, user in places:
                    struck.setdefault(user, []).append((partition, offset))
            await self.struck_off(struck)
            faults.reach("overflow.after_batch")
        done = None
        while queue and not queue[0].left:
            done = queue.popleft().offset
        if done is not None:
            await consumer.commit({tp: done + 1})
        if not queue:
            del backlogs[tp]
        return turn

    async def next_places(
        self, consumer: AIOKafkaConsumer, turn: int, backlogs: Backlogs
    ) -> tuple[int, TopicPartition | None]:
        """The overflow partition whose next batch comes now, from the first partition from
        `turn` on that has a record being worked through or fetched (the consumer fetches
        every assigned partition ahead); with none, whatever a fetch brings within
        `FETCH_WAIT_MS`. Returns the next turn too. A partition no longer assigned drops its
        records: its new owner reads them again from the committed offset."""
        assigned = sorted(consumer.assignment(), key=lambda tp: (tp.topic, tp.partition))
        for tp in backlogs.keys() - set(assigned):
            del backlogs[tp]
        for step in range(len(assigned)):
            tp = assigned[(turn + step) % len(assigned)]
            if tp not in backlogs:
                fetched = await consumer.getmany(tp, timeout_ms=0, max_records=1)
                for record in fetched.get(tp, ()):
                    backlogs[tp] = deque([_backlog(record)])
            if tp in backlogs:
                return turn + step + 1, tp
        fetched = await consumer.getmany(timeout_ms=FETCH_WAIT_MS, max_records=1)
        for tp, records in fetched.items():
            for record in records:
                backlogs[tp] = deque([_backlog(record)])
                return turn, tp
        return turn, None


@dataclass
class _Cursor:
    """Where one partition's reader stands: the offset it returns next, and what it read
    past the last records asked for (often the next ones asked for)."""

    consumer: Any
    next: int = -1
    ahead: list[RawEvent] = field(default_factory=list)


@dataclass
class TurnsReader:
    """Records of the turns topic read at their offsets, with a consumer of no group per
    partition (started on first use), which reads forward from where it stands while the
    next offsets are near (`READ_THROUGH`): a diverted flood is read in one pass."""

    topic: str
    new_consumer: Callable[[], Any]
    _cursors: dict[int, _Cursor] = field(default_factory=dict)

    async def read(
        self, partition: int, offsets: Sequence[int], *, say_gone: bool = True
    ) -> list[RawEvent]:
        """The records at `offsets` (ascending) of `partition`, those the log still holds
        (with `say_gone`, those it no longer holds are logged)."""
        tp = TopicPartition(self.topic, partition)
        cursor = self._cursors.get(partition)
        if cursor is None:
            consumer = self.new_consumer()
            await consumer.start()
            consumer.assign([tp])
            cursor = self._cursors[partition] = _Cursor(consumer)
        found = await _read(cursor, tp, offsets)
        if len(found) < len(offsets):
            # Once more from the first one missing, with nothing read ahead: the embedded
            # broker can hand a read a later batch before an earlier one written at the same
            # time (`edges.faust.skipped`). Only what is missing then is gone.
            have = {raw.offset for raw in found}
            missing = [offset for offset in offsets if offset not in have]
            cursor.consumer.seek(tp, missing[0])
            cursor.next, cursor.ahead = missing[0], []
            found = sorted(found + await _read(cursor, tp, missing), key=lambda raw: raw.offset)
        if say_gone and len(found) < len(offsets):
            log.error(
                "%d of %d diverted records are gone from %s[%d] (past its retention)",
                len(offsets) - len(found),
                len(offsets),
                self.topic,
                partition,
            )
        return found

    async def close(self) -> None:
        for cursor in self._cursors.values():
            await cursor.consumer.stop()
        self._cursors.clear()


async def _read(cursor: _Cursor, tp: TopicPartition, offsets: Sequence[int]) -> list[RawEvent]:
    """What `TurnsReader.read` reads in one pass from where `cursor` stands: the records at
    `offsets` (ascending) it is handed, and those past them kept for the next read."""
    first, last, wanted = offsets[0], offsets[-1], set(offsets)
    held = [raw for raw in cursor.ahead if raw.offset >= first]
    start = held[0].offset if held else cursor.next
    if not 0 <= start <= first <= cursor.next + READ_THROUGH:
        cursor.consumer.seek(tp, first)
        cursor.next, held = first, []
    found = [raw for raw in held if raw.offset in wanted]
    ahead = [raw for raw in held if raw.offset > last]
    while cursor.next <= last:
        fetched = await cursor.consumer.getmany(tp, timeout_ms=FETCH_WAIT_MS)
        records = fetched.get(tp, [])
        if not records:
            position = await cursor.consumer.position(tp)
            if position > last:  # past the retention: what is left of them is read
                cursor.next = position
                break
            continue
        cursor.next = records[-1].offset + 1
        found += [_raw(r) for r in records if r.offset in wanted]
        ahead += [_raw(r) for r in records if r.offset > last]
    cursor.ahead = ahead
    return found


def _backlog(record: Any) -> Backlog:
    """The places an overflow record names. A copy of a turns record, as versions before
    places forwarded, names the one place its header gives; a record that is neither names
    none (logged: nothing can be read back for it)."""
    raw = _raw(record)
    places = decode_places(raw.value) or _copied(raw)
    if places is None:
        log.error(
            "an overflow record at %s[%d]@%d names no places", raw.topic, raw.partition, raw.offset
        )
        return Backlog(raw.offset, -1, [])
    return Backlog(raw.offset, places.partition, places.in_log_order())


def _copied(raw: RawEvent) -> TurnsPlaces | None:
    origin = at_origin(raw)
    if origin is raw:
        return None
    try:
        user_id = json.loads(raw.value).get("user_id")
    except (ValueError, AttributeError, RecursionError):
        return None
    if not isinstance(user_id, str):
        return None
    return TurnsPlaces(origin.partition, {user_id: (origin.offset,)})


def _raw(record: Any) -> RawEvent:
    stamp = record.timestamp / 1000 if record.timestamp is not None else None
    headers = tuple((str(k), bytes(v)) for k, v in (record.headers or ()))
    value = record.value or b""
    return RawEvent(value, record.topic, record.partition, record.offset, stamp, headers)
