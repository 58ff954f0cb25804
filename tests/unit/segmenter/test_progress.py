"""The segmenter marks how far it has committed, per partition, and never ahead of the tree."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from tests.unit.segmenter.test_handler import USER, consumed, exchange, rig, turn

from memstream.contracts.records import Consumed, RawEvent
from memstream.domain.ids import segment_id
from memstream.domain.models import InputEvent
from memstream.ports import UserCommit


def on_partitions(
    events: list[InputEvent], partitions: list[int], topic: str = "turns", first: int = 10
) -> list[Consumed[InputEvent]]:
    """Events as records of these partitions of `topic`, each partition's offsets counting
    from `first`."""
    counts: dict[int, int] = {}
    records = []
    for event, partition in zip(events, partitions, strict=True):
        offset = first + counts.get(partition, 0)
        counts[partition] = counts.get(partition, 0) + 1
        records.append(Consumed(event, RawEvent(b"{}", topic, partition, offset)))
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

    async def spy(next_offsets: dict[int, int], topic: str | None = None) -> None:
        marked_with.append([n.id for n in await r.l1s()])
        await mark(next_offsets, topic)

    r.tree.mark_progress = spy  # type: ignore[method-assign]
    await r.segmenter.handle_batch(consumed(exchange(0)))
    assert marked_with == [[segment_id(USER, ["q0", "a0"])]]


async def test_the_process_is_told_of_each_mark_once_it_is_written() -> None:
    told: list[tuple[dict[int, int], dict[int, int]]] = []
    r = rig(on_progress=lambda marks, _: told.append((dict(marks), dict(r.tree.next_offsets))))
    await r.segmenter.handle_batch(on_partitions(exchange(0), [2, 2]))
    await r.segmenter.handle_batch(on_partitions(exchange(1), [4, 4]))
    # Each batch's own marks, told once they are in the store.
    assert told == [({2: 12}, {2: 12}), ({4: 12}, {2: 12, 4: 12})]


async def test_a_batch_whose_commit_fails_marks_nothing() -> None:
    told: list[str] = []
    r = rig(on_progress=lambda *_: told.append("marked"))

    async def refused(commit: object) -> bool:
        raise ConnectionError("redis went away")

    r.tree.commit_user = refused  # type: ignore[assignment,method-assign]
    with pytest.raises(ConnectionError):
        await r.segmenter.handle_batch(consumed(exchange(0)))
    assert r.tree.next_offsets == {} and told == []


async def test_the_mark_does_not_wait_for_the_outbox_to_be_published() -> None:
    """The outbox is in the tree with the leaves: a read may answer before its events are
    on the feed, and a replay after a failed publish sends them before anything new."""
    told: list[str] = []
    r = rig(on_progress=lambda *_: told.append("marked"))
    r.publisher.failures = 1  # the outbox cannot be published: the batch raises
    with pytest.raises(ConnectionError):
        await r.segmenter.handle_batch(consumed(exchange(0)))
    assert r.tree.next_offsets == {0: 2} and told == ["marked"]
    assert r.publisher.sent == [] and await r.tree.outbox(USER, "segmenter")
    await r.segmenter.handle_batch(consumed(exchange(0)))  # the replay
    assert [o.value["type"] for o in r.publisher.sent][:1] == ["memory.v1"]
    assert await r.tree.outbox(USER, "segmenter") == []


async def test_each_step_is_marked_once_committed_before_the_next_step_is_stored() -> None:
    r = rig(step_size=2)
    marked: list[tuple[dict[int, int], int]] = []
    mark = r.tree.mark_progress

    async def spy(next_offsets: dict[int, int], topic: str | None = None) -> None:
        marked.append((dict(next_offsets), len(await r.l1s())))
        await mark(next_offsets, topic)

    r.tree.mark_progress = spy  # type: ignore[method-assign]
    events = exchange(0) + exchange(1) + exchange(2)
    await r.segmenter.handle_batch(on_partitions(events, [0] * 6))
    assert marked == [({0: 12}, 1), ({0: 14}, 2), ({0: 16}, 3)]


async def test_a_step_publishes_every_users_outbox_in_one_call() -> None:
    r = rig()
    calls: list[int] = []
    publish = r.publisher.publish

    async def counted(events: list[object]) -> None:
        calls.append(len(events))
        await publish(events)  # type: ignore[arg-type]

    r.publisher.publish = counted  # type: ignore[method-assign]
    users = ["ann", "bo", "cy"]
    await r.segmenter.handle_batch(consumed([t for u in users for t in exchange(0, user=u)]))
    assert len(calls) == 1 and calls[0] >= len(users)  # at least each user's L1
    assert [await r.tree.outbox(u, "segmenter") for u in users] == [[]] * len(users)


async def test_records_from_no_partition_mark_nothing() -> None:
    r = rig()
    batch = [replace(c, raw=replace(c.raw, partition=-1)) for c in consumed([turn("q0", 0)])]
    await r.segmenter.handle_batch(batch)
    assert r.tree.next_offsets == {}


async def test_a_failed_commit_is_raised_once_the_steps_other_commits_have_ended() -> None:
    """The users' commits go side by side; none of them may land after the batch's retry."""
    r = rig()
    commit = r.tree.commit_user
    ended: list[str] = []

    async def one_fails(c: UserCommit) -> bool:
        if c.user_id == "bo":
            raise ConnectionError("redis went away")
        for _ in range(5):  # still writing when the other one fails
            await asyncio.sleep(0)
        ended.append(c.user_id)
        return await commit(c)

    r.tree.commit_user = one_fails  # type: ignore[method-assign]
    with pytest.raises(ConnectionError):
        await r.segmenter.handle_batch(consumed(exchange(0, user="bo") + exchange(0, user="ann")))
    assert ended == ["ann"] and r.tree.next_offsets == {}


ACME = "turns.acme"


async def test_with_topics_per_tenant_each_topics_partition_is_marked_apart() -> None:
    told: list[tuple[dict[int, int], str | None]] = []
    r = rig(
        shared_topic="turns", on_progress=lambda marks, topic: told.append((dict(marks), topic))
    )
    batch = on_partitions(exchange(0), [0, 0]) + on_partitions(
        exchange(0, user="acme:ann"), [0, 0], topic=ACME, first=500
    )
    await r.segmenter.handle_batch(batch)
    # Partition 0 of the shared topic keeps its field; acme's partition 0 has its own.
    assert r.tree.next_offsets == {0: 12}
    assert r.tree.topic_offsets == {(ACME, 0): 502}
    assert sorted(told, key=str) == sorted([({0: 12}, None), ({0: 502}, ACME)], key=str)


async def test_without_topics_per_tenant_every_record_is_marked_as_the_shared_topics() -> None:
    r = rig()
    await r.segmenter.handle_batch(on_partitions(exchange(0), [1, 1], topic=ACME))
    assert r.tree.next_offsets == {1: 12} and r.tree.topic_offsets == {}
