"""The segmenter marks how far it has committed, per partition, and never ahead of the tree."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tests.unit.segmenter.test_handler import USER, consumed, exchange, rig, turn

from memstream.contracts.records import Consumed, RawEvent
from memstream.domain.ids import segment_id
from memstream.domain.models import InputEvent


def on_partitions(events: list[InputEvent], partitions: list[int]) -> list[Consumed[InputEvent]]:
    """Events as records of these partitions, each partition's offsets counting from 10."""
    counts: dict[int, int] = {}
    records = []
    for event, partition in zip(events, partitions, strict=True):
        offset = 10 + counts.get(partition, 0)
        counts[partition] = counts.get(partition, 0) + 1
        records.append(Consumed(event, RawEvent(b"{}", "turns", partition, offset)))
    return records


async def test_a_batch_marks_the_offset_after_its_last_record_of_each_partition() -> None:
    r = rig()
    events = exchange(0) + exchange(1, user="bo")
    await r.segmenter.handle_batch(on_partitions(events, [0, 0, 3, 3]))
    assert r.tree.next_offsets == {0: 12, 3: 12}


async def test_the_mark_is_written_after_the_leaves_it_covers() -> None:
    r = rig()
    marked_with: list[list[str]] = []
    mark = r.tree.mark_progress

    async def spy(next_offsets: dict[int, int]) -> None:
        marked_with.append([n.id for n in await r.l1s()])
        await mark(next_offsets)

    r.tree.mark_progress = spy  # type: ignore[method-assign]
    await r.segmenter.handle_batch(consumed(exchange(0)))
    assert marked_with == [[segment_id(USER, ["q0", "a0"])]]


async def test_the_process_is_told_of_each_mark_once_it_is_written() -> None:
    told: list[tuple[dict[int, int], dict[int, int]]] = []
    r = rig(on_progress=lambda marks: told.append((dict(marks), dict(r.tree.next_offsets))))
    await r.segmenter.handle_batch(on_partitions(exchange(0), [2, 2]))
    await r.segmenter.handle_batch(on_partitions(exchange(1), [4, 4]))
    # Each batch's own marks, told once they are in the store.
    assert told == [({2: 12}, {2: 12}), ({4: 12}, {2: 12, 4: 12})]


async def test_a_batch_that_fails_marks_nothing() -> None:
    told: list[str] = []
    r = rig(on_progress=lambda _: told.append("marked"))
    r.publisher.failures = 1  # the outbox cannot be published: the batch raises
    with pytest.raises(ConnectionError):
        await r.segmenter.handle_batch(consumed(exchange(0)))
    assert r.tree.next_offsets == {} and told == []


async def test_records_from_no_partition_mark_nothing() -> None:
    r = rig()
    batch = [replace(c, raw=replace(c.raw, partition=-1)) for c in consumed([turn("q0", 0)])]
    await r.segmenter.handle_batch(batch)
    assert r.tree.next_offsets == {}
