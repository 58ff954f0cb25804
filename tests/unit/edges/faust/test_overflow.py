"""The overflow consumer takes its partitions in turn, a batch of records at a time: one
tenant's backlog (a partition of its own, the overflow being keyed by tenant) does not hold
up another tenant's records, and an overflow record is committed only once every record it
names is handled. The reader finds the records at their places in the turns log."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiokafka.structs import TopicPartition

from memstream.contracts.records import RawEvent
from memstream.contracts.turns_places import encode_places, places_of
from memstream.edges.faust.overflow import Backlogs, OverflowConsumer, Places, TurnsReader
from memstream.edges.faust.spare import SpareCapacity

FLOOD, QUIET, EMPTY = (TopicPartition("overflow", p) for p in (0, 1, 2))


@dataclass(frozen=True)
class Record:
    """A record as aiokafka hands it over."""

    topic: str
    partition: int
    offset: int
    value: bytes
    timestamp: int | None = 1_000
    headers: tuple[tuple[str, bytes], ...] = ()


def places_record(
    tp: TopicPartition, offset: int, turns_partition: int, users: dict[str, range]
) -> Record:
    named = [(user, o) for user, offsets in users.items() for o in offsets]
    value = encode_places(places_of(turns_partition, named))
    return Record(tp.topic, tp.partition, offset, value)


class Fetched:
    """The overflow's consumer: what it has fetched ahead, per partition, and its commits."""

    def __init__(self, records: dict[TopicPartition, list[Record]]) -> None:
        self.queues = {tp: deque(values) for tp, values in records.items()}
        self.committed: list[dict[TopicPartition, int]] = []

    def assignment(self) -> set[TopicPartition]:
        return set(self.queues)

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int = 1
    ) -> dict[TopicPartition, list[Record]]:
        out: dict[TopicPartition, list[Record]] = {}
        for tp in partitions or sorted(self.queues):  # aiokafka: in the order it fetched
            queue = self.queues[tp]
            while queue and max_records:
                out.setdefault(tp, []).append(queue.popleft())
                max_records -= 1
        return out

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        self.committed.append(offsets)


class Log:
    """One partition of the turns topic as a consumer of no group reads it: from its
    position, a few records a fetch; records before `start` are gone (retention)."""

    def __init__(self, partitions: dict[int, int], start: int = 0, per_fetch: int = 5) -> None:
        self.ends, self.log_start, self.per_fetch = partitions, start, per_fetch
        self.at: TopicPartition | None = None
        self.position_of = 0
        self.seeks = 0

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    def assign(self, tps: list[TopicPartition]) -> None:
        self.at = tps[0]

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.seeks += 1
        self.position_of = max(offset, self.log_start)

    async def position(self, tp: TopicPartition) -> int:
        return self.position_of

    async def getmany(self, tp: TopicPartition, timeout_ms: int = 0) -> dict[Any, list[Record]]:
        end = min(self.ends[tp.partition], self.position_of + self.per_fetch)
        found = [
            Record("turns", tp.partition, o, f"{tp.partition}:{o}".encode())
            for o in range(self.position_of, end)
        ]
        self.position_of = end
        return {tp: found} if found else {}


@dataclass
class Handled:
    batches: list[list[str]] = field(default_factory=list)
    struck: list[Places] = field(default_factory=list)

    async def consume(self, raws: list[RawEvent]) -> None:
        self.batches.append([raw.value.decode() for raw in raws])

    async def struck_off(self, places: Places) -> None:
        self.struck.append(places)


def consumer(
    handled: Handled, batch_size: int, spare: SpareCapacity | None = None
) -> OverflowConsumer:
    return OverflowConsumer(
        "overflow",
        "turns",
        "",
        "group",
        handled.consume,
        handled.struck_off,
        spare or SpareCapacity(),
        batch_size,
        {},
    )


async def test_a_quiet_tenants_records_wait_for_one_batch_of_the_flood_not_all_of_it() -> None:
    flood = places_record(FLOOD, 0, 0, {"acme:a": range(0, 12, 2), "acme:b": range(1, 12, 2)})
    quiet = places_record(QUIET, 4, 1, {"globex:q": range(3, 5)})
    fetched = Fetched({FLOOD: [flood], QUIET: [quiet], EMPTY: []})
    handled = Handled()
    overflow, reader = consumer(handled, batch_size=4), reader_of({0: 20, 1: 20})
    turn, backlogs = 0, Backlogs()
    for _ in range(4):
        turn = await overflow.step(fetched, reader, turn, backlogs)  # type: ignore[arg-type]
    assert handled.batches == [
        ["0:0", "0:1", "0:2", "0:3"],
        ["1:3", "1:4"],
        ["0:4", "0:5", "0:6", "0:7"],
        ["0:8", "0:9", "0:10", "0:11"],
    ]
    assert handled.struck[1] == {"globex:q": [(1, 3), (1, 4)]}
    # Each overflow record committed once every record it names is handled, not before.
    assert fetched.committed == [{QUIET: 5}, {FLOOD: 1}]
    assert backlogs == {}


async def test_its_batch_is_handled_once_the_batch_of_turns_running_is_done() -> None:
    spare = SpareCapacity(longest_s=0.0)  # past its longest wait: it reads its batch at once
    fetched = Fetched({FLOOD: [places_record(FLOOD, 0, 0, {"acme:a": range(2)})]})
    handled = Handled()
    overflow, reader = consumer(handled, 4, spare), reader_of({0: 20})
    turns_in, release = asyncio.Event(), asyncio.Event()

    async def batch_of_turns() -> None:
        async with spare.handling():
            turns_in.set()
            await release.wait()

    turns = asyncio.create_task(batch_of_turns())
    await turns_in.wait()
    await spare.turn()
    step = asyncio.create_task(overflow.step(fetched, reader, 0, {}))  # type: ignore[arg-type]
    await asyncio.wait({step}, timeout=0.2)
    assert handled.batches == []  # read, but not handled beside the batch of turns
    release.set()
    await asyncio.wait_for(asyncio.gather(turns, step), timeout=5.0)
    assert handled.batches == [["0:0", "0:1"]]


async def test_with_nothing_fetched_it_waits_on_every_partition() -> None:
    fetched, handled = Fetched({FLOOD: [], QUIET: []}), Handled()
    turn = await consumer(handled, 4).step(fetched, reader_of({0: 0}), 3, {})  # type: ignore[arg-type]
    assert (turn, handled.batches, fetched.committed) == (3, [], [])


async def test_a_partition_taken_away_drops_its_record_uncommitted() -> None:
    flood = places_record(FLOOD, 7, 0, {"acme:a": range(10)})
    fetched, handled = Fetched({FLOOD: [flood]}), Handled()
    overflow, reader = consumer(handled, 4), reader_of({0: 20})
    backlogs: Backlogs = {}
    await overflow.step(fetched, reader, 0, backlogs)  # type: ignore[arg-type]
    assert list(backlogs) == [FLOOD]
    fetched.queues = {QUIET: deque()}  # a rebalance: its new owner reads it from offset 7
    await overflow.step(fetched, reader, 0, backlogs)  # type: ignore[arg-type]
    assert backlogs == {} and fetched.committed == []


async def test_a_batch_ends_one_overflow_record_and_begins_the_next() -> None:
    first = places_record(FLOOD, 3, 0, {"acme:a": range(3)})
    second = places_record(FLOOD, 4, 1, {"acme:b": range(3)})
    fetched, handled = Fetched({FLOOD: [first, second]}), Handled()
    overflow, reader = consumer(handled, 4), reader_of({0: 20, 1: 20})
    backlogs: Backlogs = {}
    await overflow.step(fetched, reader, 0, backlogs)  # type: ignore[arg-type]
    assert handled.batches == [["0:0", "0:1", "0:2", "1:0"]]
    assert fetched.committed == [{FLOOD: 4}]  # the first record only: the second is begun
    await overflow.step(fetched, reader, 0, backlogs)  # type: ignore[arg-type]
    assert handled.batches[1] == ["1:1", "1:2"]
    assert fetched.committed == [{FLOOD: 4}, {FLOOD: 5}] and backlogs == {}


def reader_of(ends: dict[int, int], start: int = 0) -> TurnsReader:
    return TurnsReader("turns", lambda: Log(ends, start))


async def test_the_reader_reads_on_through_near_places_and_seeks_to_far_ones() -> None:
    logs: list[Log] = []

    def new_log() -> Log:
        logs.append(Log({0: 2_000, 1: 50}))
        return logs[-1]

    reader = TurnsReader("turns", new_log)
    assert [r.offset for r in await reader.read(0, [3, 4, 9])] == [3, 4, 9]
    assert [r.offset for r in await reader.read(0, [10, 12])] == [10, 12]  # read ahead
    assert [r.offset for r in await reader.read(0, [40])] == [40]  # read through
    assert logs[0].seeks == 1
    assert [r.offset for r in await reader.read(0, [1_500])] == [1_500]  # too far: a seek
    assert [r.offset for r in await reader.read(0, [2])] == [2]  # behind: a seek
    assert [r.offset for r in await reader.read(1, [7])] == [7]  # a consumer of its own
    assert [r.offset for r in await reader.read(0, [3])] == [3]  # where it stood
    assert [log.seeks for log in logs] == [3, 1]


async def test_records_past_the_logs_retention_are_left_out() -> None:
    assert [r.offset for r in await reader_of({0: 30}, start=20).read(0, [5, 8, 21])] == [21]
    assert await reader_of({0: 30}, start=30).read(0, [5, 8]) == []
