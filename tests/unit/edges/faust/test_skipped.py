"""Records the turns agent's consumer stepped over (the embedded broker handed it a later
batch first) are read back and go before the record that followed them, in their
partition's order; nothing is read while the offsets follow one another."""

from __future__ import annotations

from typing import Any

import faust
from aiokafka.structs import TopicPartition
from faust.types import TP
from tests.unit.edges.faust.test_overflow import Log, Record

from memstream.contracts.records import RawEvent
from memstream.edges.faust.app import _forget_revoked
from memstream.edges.faust.overflow import TurnsReader
from memstream.edges.faust.skipped import SkippedByTopic, SkippedRecords


def handed(*places: tuple[int, int]) -> list[RawEvent]:
    """Records as the agent's consumer hands them over (value: where they are)."""
    return [RawEvent(f"{p}:{o}".encode(), "turns", p, o, 1.0) for p, o in places]


class TailLog(Log):
    """A partition whose records at `late` are readable only from the `readable_from`th
    fetch on: the broker's tail while two producers append to it."""

    def __init__(self, ends: dict[int, int], late: set[int], readable_from: int) -> None:
        super().__init__(ends, per_fetch=50)
        self.late, self.readable_from, self.fetches = late, readable_from, 0

    async def getmany(self, tp: TopicPartition, timeout_ms: int = 0) -> dict[Any, list[Record]]:
        self.fetches += 1
        got = await super().getmany(tp, timeout_ms)
        if self.fetches < self.readable_from:
            got = {
                t: [r for r in records if r.offset not in self.late] for t, records in got.items()
            }
        return got


def values(raws: list[RawEvent]) -> list[str]:
    return [raw.value.decode() for raw in raws]


async def test_records_stepped_over_go_back_before_the_record_after_them() -> None:
    logs: list[Log] = []

    def new_log() -> Log:
        logs.append(Log({0: 100, 1: 100}))
        return logs[-1]

    skipped = SkippedRecords(TurnsReader("turns", new_log))
    first = await skipped.filled(handed((0, 10), (1, 4), (0, 11)))
    assert values(first) == ["0:10", "1:4", "0:11"] and logs == []  # nothing read
    later = await skipped.filled(handed((1, 5), (0, 14), (1, 8), (0, 15)))
    assert values(later) == ["1:5", "0:12", "0:13", "0:14", "1:6", "1:7", "1:8", "0:15"]


async def test_records_readable_only_a_moment_later_are_read_again_until_found() -> None:
    tail = TailLog({0: 40}, late={21, 22}, readable_from=2)
    skipped = SkippedRecords(TurnsReader("turns", lambda: tail), read_again_s=0.0)
    await skipped.filled(handed((0, 20)))
    assert values(await skipped.filled(handed((0, 23)))) == ["0:21", "0:22", "0:23"]
    assert tail.fetches >= 2


async def test_a_partition_read_again_or_taken_over_reads_nothing_back() -> None:
    logs: list[Log] = []
    skipped = SkippedRecords(TurnsReader("turns", lambda: logs.append(Log({0: 9})) or logs[-1]))
    await skipped.filled(handed((0, 5_000)))
    assert values(await skipped.filled(handed((0, 40), (0, 9_000)))) == ["0:40", "0:9000"]
    assert logs == []


async def test_the_overflow_reader_reads_again_a_record_missing_from_what_it_read_ahead() -> None:
    """A place behind which the broker hid a record when the reader read ahead of it: not
    struck off as gone, read again."""
    tail = TailLog({0: 100}, late={12}, readable_from=2)
    reader = TurnsReader("turns", lambda: tail)
    assert values(await reader.read(0, [3])) == ["0:3"]  # read ahead to 52, 12 not yet there
    assert values(await reader.read(0, [11, 12, 13])) == ["0:11", "0:12", "0:13"]


async def test_a_partition_given_back_after_a_rebalance_starts_anew() -> None:
    logs: list[Log] = []
    skipped = SkippedRecords(TurnsReader("turns", lambda: logs.append(Log({0: 100})) or logs[-1]))
    await skipped.filled(handed((0, 10), (1, 10)))
    skipped.forget([0])  # another worker had partition 0 and handled 11-29 meanwhile
    assert values(await skipped.filled(handed((0, 30), (1, 11)))) == ["0:30", "1:11"]
    assert logs == []


async def test_the_apps_revoked_partitions_are_forgotten() -> None:
    logs: list[Log] = []
    skipped = SkippedRecords(
        TurnsReader("turns", lambda: logs.append(Log({0: 100, 1: 100})) or logs[-1])
    )
    app = faust.App("test-revoked", broker="kafka://127.0.0.1:1")
    by_topic = SkippedByTopic({"turns": skipped})
    app.on_partitions_revoked.connect(_forget_revoked(by_topic, ["turns"]))
    await skipped.filled(handed((0, 10), (1, 10)))
    await app.on_partitions_revoked.send({TP("turns", 0), TP("windows", 1)})
    assert values(await skipped.filled(handed((0, 30), (1, 11)))) == ["0:30", "1:11"]
    assert logs == []  # nothing read
    assert values(await skipped.filled(handed((1, 13)))) == ["1:12", "1:13"]  # 1 still watched


async def test_each_tenants_turns_topic_has_offsets_of_its_own() -> None:
    # Partition 0 of two turns topics (`contracts.tenant_topics`): neither's offsets are a
    # gap in the other's.
    logs: list[Log] = []
    readers = {
        topic: SkippedRecords(TurnsReader(topic, lambda: logs.append(Log({0: 100})) or logs[-1]))
        for topic in ("turns.acme", "turns.globex")
    }
    both = SkippedByTopic(readers)
    acme = [RawEvent(f"a{o}".encode(), "turns.acme", 0, o, 1.0) for o in (50, 51)]
    globex = [RawEvent(f"g{o}".encode(), "turns.globex", 0, o, 1.0) for o in (3, 4)]
    await both.filled([acme[0], globex[0]])
    filled = await both.filled([globex[1], acme[1]])
    assert values(filled) == ["g4", "a51"]
    assert logs == []  # nothing read back
