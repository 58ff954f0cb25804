"""The overflow consumer takes its partitions in turn: one tenant's backlog (a partition of
its own, the overflow being keyed by tenant) does not hold up another tenant's records."""

from __future__ import annotations

from collections import deque
from typing import Any

from aiokafka.structs import TopicPartition

from memstream.edges.faust.overflow import OverflowConsumer
from memstream.edges.faust.spare import SpareCapacity

FLOOD, QUIET, EMPTY = (TopicPartition("overflow", p) for p in (0, 1, 2))


class Fetched:
    """What aiokafka's consumer has fetched ahead, per partition (`getmany`'s answers)."""

    def __init__(self, records: dict[TopicPartition, list[str]]) -> None:
        self.queues = {tp: deque(values) for tp, values in records.items()}

    def assignment(self) -> set[TopicPartition]:
        return set(self.queues)

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int = 1
    ) -> dict[TopicPartition, list[str]]:
        out: dict[TopicPartition, list[str]] = {}
        for tp in partitions or sorted(self.queues):  # aiokafka: in the order it fetched
            queue = self.queues[tp]
            while queue and max_records:
                out.setdefault(tp, []).append(queue.popleft())
                max_records -= 1
        return out


def consumer(batch_size: int) -> OverflowConsumer:
    async def consume(batch: Any) -> None:
        return None

    return OverflowConsumer("overflow", "", "group", consume, SpareCapacity(), batch_size, {})


async def test_a_quiet_tenants_records_wait_for_one_batch_of_the_flood_not_all_of_it() -> None:
    fetched = Fetched({FLOOD: [f"f{n}" for n in range(100)], QUIET: ["q0", "q1"], EMPTY: []})
    overflow, turn, batches = consumer(batch_size=4), 0, []
    for _ in range(4):
        turn, records = await overflow.next_batch(fetched, turn)  # type: ignore[arg-type]
        batches.append(records)
    assert batches == [
        ["f0", "f1", "f2", "f3"],
        ["q0", "q1"],
        ["f4", "f5", "f6", "f7"],
        [
            "f8",
            "f9",
            "f10",
            "f11",
        ],
    ]


async def test_with_nothing_fetched_it_waits_on_every_partition() -> None:
    fetched = Fetched({FLOOD: [], QUIET: []})
    turn, records = await consumer(batch_size=4).next_batch(fetched, 3)  # type: ignore[arg-type]
    assert (turn, records) == (3, [])
