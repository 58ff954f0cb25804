"""The segmenter's overflow consumer: records of the overflow topic, taken only with the
capacity the turns leave spare (`spare.SpareCapacity`).

Not a Faust agent: Faust delivers every fetched record to its agent's stream buffer, and a
full buffer stops the fetcher of every topic, so an overflow that waits for spare capacity
would stall the turns it waits for. This is a consumer of its own (group
`<app id>-overflow`, started with the Faust app as its task): it fetches only when it may
take a batch, hands the batch to the handler the way an agent does (`consume_batch`:
decoded once, dead letters, retries), and commits the batch's offsets once it is handled.
Each record is read at its place in the turns log (`contracts.records.at_origin`).

Each tenant's records go to a partition of its own (`ports.OverflowQueues`: the least taken
when the tenant is first diverted; shared only once every partition has a tenant), and the
batches take the partitions in turn (`next_batch`): a tenant over its share for a moment
waits behind one batch of each other tenant's backlog, not behind the whole of a flood that
came first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer

from memstream.contracts.records import RawEvent, at_origin
from memstream.edges.faust.spare import SpareCapacity

log = logging.getLogger(__name__)

FETCH_WAIT_MS = 500  # the longest one fetch waits for records before the loop looks again


@dataclass(frozen=True)
class OverflowConsumer:
    """`consume` (the agents' `consume_batch` with its handler and dead letters bound) fed
    with batches of at most `batch_size` records of `topic`, each once `spare` allows."""

    topic: str
    bootstrap: str
    group: str
    consume: Callable[[list[RawEvent]], Any]
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
            max_poll_records=self.batch_size,
            **self.consumer_options,
        )
        await consumer.start()
        turn = 0  # the partition whose batch comes next, counted over the assigned ones
        try:
            while True:
                await self.spare.turn()
                turn, records = await self.next_batch(consumer, turn)
                if not records:
                    continue
                await self.consume([at_origin(_raw(r)) for r in records])
                await consumer.commit()  # the positions of what was just handled
        finally:
            await asyncio.shield(consumer.stop())

    async def next_batch(self, consumer: AIOKafkaConsumer, turn: int) -> tuple[int, list[Any]]:
        """The next batch, from the first partition from `turn` on that has records
        fetched (the consumer fetches every assigned partition ahead); with none, whatever
        a fetch brings within `FETCH_WAIT_MS`. Returns the next turn too."""
        assigned = sorted(consumer.assignment(), key=lambda tp: (tp.topic, tp.partition))
        for step in range(len(assigned)):
            tp = assigned[(turn + step) % len(assigned)]
            fetched = await consumer.getmany(tp, timeout_ms=0, max_records=self.batch_size)
            if fetched.get(tp):
                return turn + step + 1, list(fetched[tp])
        fetched = await consumer.getmany(timeout_ms=FETCH_WAIT_MS, max_records=self.batch_size)
        return turn, [r for partition in fetched.values() for r in partition]


def _raw(record: Any) -> RawEvent:
    stamp = record.timestamp / 1000 if record.timestamp is not None else None
    headers = tuple((str(k), bytes(v)) for k, v in (record.headers or ()))
    value = record.value or b""
    return RawEvent(value, record.topic, record.partition, record.offset, stamp, headers)
