"""The segmenter's overflow consumer: the records the main path diverted, read back from the
turns log at their places, taken only with the capacity the turns leave spare
(`spare.SpareCapacity`).

Not a Faust agent: Faust delivers every fetched record to its agent's stream buffer, and a
full buffer stops the fetcher of every topic, so an overflow that waits for spare capacity
would stall the turns it waits for. This is a consumer of its own (group
`<app id>-overflow`, started with the Faust app as its task).

The overflow topic holds places, not records (`contracts.turns_places`): one record names a
tenant's diverted records of one batch by their offsets in one partition of the turns log.
The consumer works through such a record a batch of at most `batch_size` records at a time:
it reads them back from the turns topic (`TurnsReader`, a consumer of no group), hands them
to the handler the way an agent does (`consume_batch`: decoded once, dead letters, retries),
strikes their places off the ledger, and commits the overflow record's offset once all of
its records are done. A crash in between reads the record's batches again; what was already
written is dropped by the event-id dedup, as for any replay.

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
        reader = TurnsReader(
            self.turns_topic,
            AIOKafkaConsumer(
                bootstrap_servers=self.bootstrap,
                group_id=None,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
            ),
        )
        await consumer.start()
        await reader.consumer.start()
        turn = 0  # the partition whose batch comes next, counted over the assigned ones
        backlogs: dict[TopicPartition, Backlog] = {}
        try:
            while True:
                await self.spare.turn()
                turn = await self.step(consumer, reader, turn, backlogs)
        finally:
            await asyncio.shield(reader.consumer.stop())
            await asyncio.shield(consumer.stop())

    async def step(
        self,
        consumer: AIOKafkaConsumer,
        reader: TurnsReader,
        turn: int,
        backlogs: dict[TopicPartition, Backlog],
    ) -> int:
        """One batch: the next partition's (`next_places`) next records, read back, handled
        and struck off; the overflow record's offset committed once all of its records are.
        Returns the next turn."""
        turn, tp = await self.next_places(consumer, turn, backlogs)
        if tp is None:
            return turn
        backlog = backlogs[tp]
        batch = backlog.take(self.batch_size)
        if batch:
            raws = await reader.read(backlog.partition, [offset for offset, _ in batch])
            if raws:
                await self.consume(raws)
            places: dict[str, list[tuple[int, int]]] = {}
            for offset, user in batch:
                places.setdefault(user, []).append((backlog.partition, offset))
            await self.struck_off(places)
            faults.reach("overflow.after_batch")
        if not backlog.left:
            await consumer.commit({tp: backlog.offset + 1})
            del backlogs[tp]
        return turn

    async def next_places(
        self, consumer: AIOKafkaConsumer, turn: int, backlogs: dict[TopicPartition, Backlog]
    ) -> tuple[int, TopicPartition | None]:
        """The overflow partition whose next batch comes now, from the first partition from
        `turn` on that has a record being worked through or fetched (the consumer fetches
        every assigned partition ahead); with none, whatever a fetch brings within
        `FETCH_WAIT_MS`. Returns the next turn too. A partition no longer assigned drops its
        record: its new owner reads it again from the committed offset."""
        assigned = sorted(consumer.assignment(), key=lambda tp: (tp.topic, tp.partition))
        for tp in backlogs.keys() - set(assigned):
            del backlogs[tp]
        for step in range(len(assigned)):
            tp = assigned[(turn + step) % len(assigned)]
            if tp not in backlogs:
                fetched = await consumer.getmany(tp, timeout_ms=0, max_records=1)
                for record in fetched.get(tp, ()):
                    backlogs[tp] = _backlog(record)
            if tp in backlogs:
                return turn + step + 1, tp
        fetched = await consumer.getmany(timeout_ms=FETCH_WAIT_MS, max_records=1)
        for tp, records in fetched.items():
            for record in records:
                backlogs[tp] = _backlog(record)
                return turn, tp
        return turn, None


@dataclass
class TurnsReader:
    """Records of the turns topic read at their offsets, with a consumer of no group that
    reads forward from where it is while the next offsets are near (`READ_THROUGH`)."""

    topic: str
    consumer: AIOKafkaConsumer
    _at: TopicPartition | None = None
    _next: int = -1  # the offset the consumer returns next
    _ahead: list[RawEvent] = field(default_factory=list)  # read past the last batch's end

    async def read(self, partition: int, offsets: Sequence[int]) -> list[RawEvent]:
        """The records at `offsets` (ascending) of `partition`, those the log still holds."""
        tp = TopicPartition(self.topic, partition)
        first, last, wanted = offsets[0], offsets[-1], set(offsets)
        held = [raw for raw in self._ahead if raw.offset >= first]
        start = held[0].offset if held else self._next
        if self._at != tp or not start <= first <= self._next + READ_THROUGH:
            if self._at != tp:
                self.consumer.assign([tp])
                self._at = tp
            self.consumer.seek(tp, first)
            self._next, held = first, []
        found = [raw for raw in held if raw.offset in wanted]
        ahead = [raw for raw in held if raw.offset > last]
        while self._next <= last:
            fetched = await self.consumer.getmany(tp, timeout_ms=FETCH_WAIT_MS)
            records = fetched.get(tp, [])
            if not records:
                position = await self.consumer.position(tp)
                if position > last:  # past the retention: what is left of them is read
                    self._next = position
                    break
                continue
            self._next = records[-1].offset + 1
            found += [_raw(r) for r in records if r.offset in wanted]
            ahead += [_raw(r) for r in records if r.offset > last]
        self._ahead = ahead
        if len(found) < len(wanted):
            log.error(
                "%d of %d diverted records are gone from %s[%d] (past its retention)",
                len(wanted) - len(found),
                len(wanted),
                self.topic,
                partition,
            )
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
