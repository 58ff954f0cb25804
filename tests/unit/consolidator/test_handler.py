"""The consolidator over in-memory fakes: versions, the batch view, the outbox, replays."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.unit.fakes import FakeEmbedder, FakeIndex, FakeTree, FlakyPublisher

from memstream.consolidator.handler import Consolidator, Outcome
from memstream.contracts.records import Consumed, RawEvent
from memstream.domain.forgetting import Guard, Tombstone
from memstream.domain.ids import segment_id, window_node_id
from memstream.domain.models import (
    IndexedMemory,
    Level,
    MemoryNode,
    StoredNode,
    Summary,
    Window,
    WindowClosed,
)
from memstream.domain.nodes import fingerprint

USER = "ana"
T0 = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)  # a Monday
DAY = window_node_id(USER, Level.DAY, T0)
SESSION = window_node_id(USER, Level.SESSION, T0, "s1")


class Writer:
    """Summarises children by joining their texts; offline (degraded) while `down`."""

    def __init__(self) -> None:
        self.down = False
        self.calls = 0

    async def consolidate(
        self,
        level: Level,
        window: Window,
        children: Sequence[MemoryNode],
        history: Sequence[MemoryNode],
        knowledge: object = None,
    ) -> Summary:
        self.calls += 1
        text = f"{level.label}: " + "; ".join(c.text for c in children)
        return Summary("offline " + text, degraded=True) if self.down else Summary(text)


class CrashingTree(FakeTree):
    """Fails its next `failures` commits of nodes, as a worker killed before the commit."""

    failures = 0

    async def commit_nodes(
        self,
        user_id: str,
        nodes: Sequence[StoredNode],
        outbox: Sequence[dict[str, Any]],
        guard: Guard | None = None,
        removed: Sequence[MemoryNode] = (),
    ) -> bool:
        if self.failures > 0:
            self.failures -= 1
            raise RuntimeError("killed before the commit")
        return await super().commit_nodes(user_id, nodes, outbox, guard, removed)


@dataclass
class Rig:
    tree: CrashingTree
    index: FakeIndex
    llm: Writer
    publisher: FlakyPublisher
    consolidator: Consolidator

    def published_versions(self) -> list[tuple[str, int]]:
        written = [o.value for o in self.publisher.sent if o.value["type"] == "memory.v1"]
        return [(str(v["id"]), int(v["version"])) for v in written]

    async def versions(self) -> dict[str, int]:
        return {i: s.node.version for (_, i), s in self.tree.stored.items()}


def rig() -> Rig:
    tree = CrashingTree()
    index, llm, publisher = FakeIndex(tree), Writer(), FlakyPublisher()
    consolidator = Consolidator(
        tree=tree,
        index=index,  # type: ignore[arg-type]
        embedder=FakeEmbedder(),
        llm=llm,  # type: ignore[arg-type]
        publisher=publisher,
        memories_topic="memories",
    )
    return Rig(tree, index, llm, publisher, consolidator)


def leaf(n: int, minutes: int = 0, user: str = USER) -> MemoryNode:
    at = T0 + timedelta(minutes=minutes or n)
    return MemoryNode(
        id=segment_id(user, [f"m{n}"]),
        user_id=user,
        level=Level.SEGMENT,
        t_start=at,
        t_end=at,
        text=f"leaf {n}",
        parent_id=window_node_id(user, Level.SESSION, T0, "s1"),
        source_ids=(f"m{n}",),
        speakers=("Ana",),
    )


def session_closure(end_minutes: int = 10, user: str = USER) -> WindowClosed:
    window = Window(user, Level.SESSION, T0, T0 + timedelta(minutes=end_minutes), "s1")
    node_id = window_node_id(user, Level.SESSION, T0, "s1")
    return WindowClosed(window, "session_end", node_id, window_node_id(user, Level.DAY, T0))


def day_closure() -> WindowClosed:
    window = Window(USER, Level.DAY, T0.replace(hour=0), T0.replace(hour=0) + timedelta(days=1))
    return WindowClosed(window, "watermark", DAY, window_node_id(USER, Level.WEEK, T0))


def skipped(outcomes: list[Outcome]) -> list[str | None]:
    return [o.skipped for o in outcomes]


async def test_a_closed_session_becomes_a_node_indexed_committed_and_published() -> None:
    r = rig()
    r.tree.add(leaf(1))
    r.tree.add(leaf(2, minutes=30))  # after the window's end: the node grows over it
    [outcome] = await r.consolidator.handle_batch([session_closure()])
    node = outcome.node
    assert node is not None and outcome.skipped is None
    assert (node.id, node.version, node.parent_id) == (SESSION, 1, DAY)
    assert (node.t_start, node.t_end) == (T0, T0 + timedelta(minutes=30))
    assert node.source_ids == ("m1", "m2")
    stored = await r.tree.get(USER, SESSION)
    assert stored == StoredNode(node, fingerprint([leaf(1), leaf(2, minutes=30)]))
    assert [m.node for m in r.index.upserted] == [node]
    assert r.published_versions() == [(SESSION, 1)]
    # The change feed says the window is consolidated after announcing its memory.
    assert [
        (o.value["type"], o.value.get("id") or o.value["node_id"]) for o in r.publisher.sent
    ] == [
        ("memory.v1", SESSION),
        ("window_consolidated.v1", SESSION),
    ]
    assert await r.tree.outbox(USER, "consolidator") == []


async def test_a_window_without_children_writes_nothing() -> None:
    r = rig()
    assert skipped(await r.consolidator.handle_batch([session_closure()])) == ["no children"]
    assert (r.tree.stored, r.publisher.sent) == ({}, [])


async def test_unchanged_children_keep_the_version_and_a_new_child_adds_one() -> None:
    r = rig()
    r.tree.add(leaf(1))
    await r.consolidator.handle_batch([session_closure()])
    calls = r.llm.calls

    again = await r.consolidator.handle_batch([session_closure(), session_closure()])
    assert skipped(again) == ["unchanged", "unchanged"]
    assert r.llm.calls == calls  # an unchanged window costs no model call
    assert r.published_versions() == [(SESSION, 1)]

    r.tree.add(leaf(2))  # a late turn's L1
    [late] = await r.consolidator.handle_batch([session_closure()])
    assert late.node is not None and late.node.version == 2
    assert late.node.source_ids == ("m1", "m2")
    assert r.published_versions() == [(SESSION, 1), (SESSION, 2)]


async def test_a_parent_later_in_the_batch_sees_the_child_just_written() -> None:
    r = rig()
    r.tree.add(leaf(1))
    outcomes = await r.consolidator.handle_batch([session_closure(), day_closure()])
    session, day = (o.node for o in outcomes)
    assert session is not None and day is not None
    assert day.children == (SESSION,)
    assert day.source_ids == ("m1",)
    assert (await r.tree.get(USER, DAY)) == StoredNode(day, fingerprint([session]))
    assert r.published_versions() == [(SESSION, 1), (DAY, 1)]
    # Replaying the batch changes nothing: the child's version is what the parent saw.
    assert skipped(await r.consolidator.handle_batch([session_closure(), day_closure()])) == [
        "unchanged",
        "unchanged",
    ]
    assert await r.versions() == {leaf(1).id: 1, SESSION: 1, DAY: 1}


async def test_a_crash_between_commit_and_publish_is_published_on_replay_once() -> None:
    r = rig()
    r.tree.add(leaf(1))
    r.publisher.failures = 1
    with pytest.raises(ConnectionError):
        await r.consolidator.handle_batch([session_closure(), day_closure()])
    versions = await r.versions()
    assert versions == {leaf(1).id: 1, SESSION: 1, DAY: 1}  # committed, not published
    # Each window's memory and its consolidation, waiting in the outbox.
    assert len(await r.tree.outbox(USER, "consolidator")) == 4

    replay = await r.consolidator.handle_batch([session_closure(), day_closure()])
    assert skipped(replay) == ["unchanged", "unchanged"]
    assert r.published_versions() == [(SESSION, 1), (DAY, 1)]  # the leftover, exactly once
    assert await r.versions() == versions
    assert await r.tree.outbox(USER, "consolidator") == []


async def test_a_crash_before_the_commit_is_redone_with_the_same_versions() -> None:
    r = rig()
    r.tree.add(leaf(1))
    await r.consolidator.handle_batch([session_closure()])
    r.tree.add(leaf(2))
    r.tree.failures = 1
    with pytest.raises(RuntimeError):
        await r.consolidator.handle_batch([session_closure(), day_closure()])
    assert await r.versions() == {leaf(1).id: 1, leaf(2).id: 1, SESSION: 1}  # nothing moved

    await r.consolidator.handle_batch([session_closure(), day_closure()])
    assert await r.versions() == {leaf(1).id: 1, leaf(2).id: 1, SESSION: 2, DAY: 1}
    assert r.published_versions() == [(SESSION, 1), (SESSION, 2), (DAY, 1)]


async def test_a_leftover_outbox_goes_out_before_the_users_next_closure() -> None:
    r = rig()
    r.tree.add(leaf(1))
    r.publisher.failures = 1
    with pytest.raises(ConnectionError):
        await r.consolidator.handle_batch([session_closure()])
    other = "mira"
    r.tree.add(leaf(1, user=other))
    await r.consolidator.handle_batch([session_closure(user=other), session_closure()])
    mira = window_node_id(other, Level.SESSION, T0, "s1")
    assert r.published_versions() == [(SESSION, 1), (mira, 1)]


async def test_a_degraded_node_is_rewritten_only_when_the_model_writes_it() -> None:
    r = rig()
    r.tree.add(leaf(1))
    r.llm.down = True
    [first] = await r.consolidator.handle_batch([session_closure()])
    assert first.node is not None and first.node.degraded
    assert await r.tree.degraded() == [(USER, SESSION)]

    # A replay while the model is still down gives the same offline text: same version.
    [replay] = await r.consolidator.handle_batch([session_closure()])
    assert replay.skipped == "unchanged"
    assert r.published_versions() == [(SESSION, 1)]

    r.llm.down = False
    [retry] = await r.consolidator.handle_batch([session_closure()])
    assert retry.node is not None
    assert (retry.node.version, retry.node.degraded) == (2, False)
    assert await r.tree.degraded() == []


async def test_records_from_the_windows_topic_are_handled_in_order() -> None:
    r = rig()
    r.tree.add(leaf(1))
    batch = [
        Consumed(closure, RawEvent(b"{}", "windows", 0, i))
        for i, closure in enumerate([session_closure(), day_closure()])
    ]
    outcomes = await r.consolidator.handle_records(batch)
    assert [o.closure for o in outcomes] == [c.event for c in batch]
    assert r.consolidator.handled == 2


async def test_a_forget_during_consolidation_leaves_no_node_and_no_point() -> None:
    r = rig()
    r.tree.add(leaf(1))
    consolidate = r.llm.consolidate

    async def forgetting_meanwhile(*args: Any) -> Summary:
        # The user is forgotten while the batch is writing the session and its day.
        await r.tree.forget(USER, Tombstone(forgotten_at=0.0), ttl_s=None)
        return await consolidate(*args)

    r.llm.consolidate = forgetting_meanwhile  # type: ignore[method-assign]
    outcomes = await r.consolidator.handle_batch([session_closure(), day_closure()])
    assert skipped(outcomes) == [None, None]  # both were written in the batch...
    assert r.tree.stored == {}
    assert r.publisher.sent == []
    assert await r.tree.outbox(USER, "consolidator") == []
    assert r.index.upserted == []  # ...and dropped: the tombstone was seen before indexing


async def test_a_forget_after_indexing_deletes_the_points_the_refused_commit_wrote() -> None:
    r = rig()
    r.tree.add(leaf(1))
    upsert = r.index.upsert

    async def forgotten_right_after(memories: Sequence[IndexedMemory]) -> None:
        await upsert(memories)
        await r.tree.forget(USER, Tombstone(forgotten_at=0.0), ttl_s=None)

    r.index.upsert = forgotten_right_after  # type: ignore[method-assign]
    await r.consolidator.handle_batch([session_closure()])
    assert r.tree.stored == {}
    assert r.index.deleted == [(USER, SESSION)]
    assert r.publisher.sent == []


async def test_a_closure_of_a_forgotten_user_deletes_a_point_a_crash_left() -> None:
    r = rig()
    await r.tree.forget(USER, Tombstone(forgotten_at=0.0), ttl_s=None)
    [outcome] = await r.consolidator.handle_batch([session_closure()])
    assert outcome.skipped == "no children"
    assert r.index.deleted == [(USER, SESSION)]
    assert r.tree.stored == {}
