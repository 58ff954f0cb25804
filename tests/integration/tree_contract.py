"""Behaviour every `TreeStore` shows, as a base class of tests.

A store's test module subclasses `TreeContract` (as `TestSomething`) and provides a `tree`
fixture: an empty store that no other test sees. Every test below then runs against it, so
RedisTree and the in-memory fake the unit tests use are held to one contract.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from memstream.adapters.redis.connection import open_client
from memstream.adapters.redis.tree import RedisTree
from memstream.contracts.codec import encode_state
from memstream.domain.forgetting import Guard, Tombstone
from memstream.domain.knowledge import entity_index, knowledge_change
from memstream.domain.models import Level, MemoryNode, SourceMessage, StoredNode
from memstream.domain.rebuild import RebuildJob, RebuildPlan
from memstream.domain.windows import initial_state
from memstream.domain.write_token import HeldMessages
from memstream.ports import ConsolidatorSnapshot, TreeStore, UserCommit
from memstream.ports.repair import TreeRestore


@asynccontextmanager
async def scratch_tree(
    redis_url: str, prefix: str, *, cluster: bool = False
) -> AsyncIterator[RedisTree]:
    """A RedisTree in a namespace no other test sees, its keys deleted afterwards; with
    `cluster`, on a Redis Cluster (its client, its layout)."""
    client = open_client(redis_url, cluster=cluster)
    namespace = f"{prefix}-{uuid.uuid4().hex[:12]}"
    try:
        yield RedisTree(client, namespace, cluster=cluster)
    finally:
        keys = [k async for k in client.scan_iter(match=f"{namespace}:*")]
        for key in keys:  # one by one: a cluster refuses a DEL across slots
            await client.delete(key)
        await client.aclose()


T0 = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)
# Ids that mean something to glob patterns or to the stores' own separators.
AWKWARD_USERS = ("an*", "an?", "[a]na", "a|b", "a", "an")


def node(
    node_id: str,
    level: Level = Level.SEGMENT,
    *,
    user: str = "ana",
    end: int = 0,
    parent: str | None = None,
    degraded: bool = False,
) -> MemoryNode:
    """A node ending `end` minutes after T0, lasting a minute."""
    t_end = T0 + timedelta(minutes=end)
    return MemoryNode(
        id=node_id,
        user_id=user,
        level=level,
        t_start=t_end - timedelta(minutes=1),
        t_end=t_end,
        text=f"text of {node_id}",
        parent_id=parent,
        children=("c1", "c2") if level > Level.SEGMENT else (),
        source_ids=(f"m-{node_id}",),
        version=2,
        degraded=degraded,
        session_id="s1",
        speakers=("Ana", "Mira"),
    )


def state(*open_levels: int) -> dict[str, Any]:
    """A window state (as the segmenter encodes it) with open windows of these levels."""
    return {
        "user_id": "ana",
        "open_windows": {f"w{i}": {"level": level} for i, level in enumerate(open_levels)},
        "pending": [],
    }


async def commit(
    tree: TreeStore,
    user: str = "ana",
    *,
    seen: tuple[str, ...] | dict[str, int] = (),
    nodes: tuple[MemoryNode, ...] = (),
    outbox: tuple[dict[str, Any], ...] = (),
    due: datetime | None = None,
    window_state: dict[str, Any] | None = None,
) -> None:
    await tree.commit_user(
        UserCommit(
            user,
            state=window_state or state(),
            seen=seen if isinstance(seen, dict) else dict.fromkeys(seen, 0),
            nodes=nodes,
            outbox=outbox,
            due=due,
        )
    )


async def save(tree: TreeStore, *nodes: MemoryNode, fingerprint: str = "fp") -> None:
    for n in nodes:
        await tree.commit_nodes(n.user_id, [StoredNode(n, fingerprint)], outbox=[])


LATER = 4e9  # epoch seconds in 2096: past any commit of these tests


class TreeContract:
    # --- repairs ---------------------------------------------------------------------------

    async def test_restored_nodes_keep_their_version_and_are_linked_and_users_listed(
        self, tree: TreeStore
    ) -> None:
        restoring = cast(TreeRestore, tree)
        assert await restoring.users_with_nodes(10) == []
        spoken = SourceMessage("m-l1", "Ana", "user", "My sister Mira moved to Porto.", T0)
        leaf = replace(node("l1", end=1, parent="s2"), messages=(spoken,))
        session = node("s2", Level.SESSION, end=2)
        said = knowledge_change([leaf])
        assert said.leaves["l1"].entities.surfaces
        restored = await restoring.restore_nodes(
            "ana", [StoredNode(leaf, ""), StoredNode(session, "fp")], said, Guard(None)
        )
        assert restored
        await save(tree, node("x", user="bo"))
        assert await tree.get_many("ana", ["l1", "s2"]) == [leaf, session]
        assert (await tree.get("ana", "s2")) == StoredNode(session, "fp")
        assert await tree.children_ids("ana", "s2") == ["l1"]
        assert await tree.level_ids("ana", Level.SESSION) == ["s2"]
        assert await tree.leaves_citing("ana", ["m-l1"]) == ["l1"]
        assert await restoring.users_with_nodes(10) == ["ana", "bo"]
        assert len(await restoring.users_with_nodes(1)) == 1
        index = await tree.entity_index("ana")  # type: ignore[attr-defined]
        assert index == entity_index({"l1": said.leaves["l1"].entities})

    # --- rebuilds --------------------------------------------------------------------------

    async def test_a_rebuild_job_commits_with_the_user_and_is_listed_until_settled(
        self, tree: TreeStore
    ) -> None:
        plan = RebuildPlan(("a", "b"), ("w",))
        job = RebuildJob("r1", None, None, tuple(Level), 2, 1, done=1, plan=plan)
        assert await tree.rebuild_job("ana") is None
        await tree.commit_user(
            UserCommit("ana", state=state(), seen={}, nodes=(), outbox=(), due=None, rebuild=job)
        )
        job = replace(job, plan=None)  # written apart, read by range
        assert await tree.rebuild_job("ana") == job
        assert await tree.rebuild_leaves("ana", 1, 5) == ["b"]
        assert await tree.rebuild_windows("ana") == ["w"]
        assert await tree.rebuilds_due(LATER, 10) == ["ana"]  # leaves left: due
        await tree.lease_rebuild("ana", LATER + 100)
        assert await tree.rebuilds_due(LATER, 10) == []
        await tree.lease_rebuild("bo", 0)  # a user not listed stays unlisted
        assert await tree.rebuilding_users() == ["ana"]
        finished = replace(job, done=2, finished=True)
        await tree.commit_user(
            UserCommit(
                "ana", state=state(), seen={}, nodes=(), outbox=(), due=None, rebuild=finished
            )
        )
        assert await tree.rebuilds_due(LATER, 10) == []  # nothing left to send
        assert await tree.rebuilding_users() == ["ana"]  # its windows may still be pending
        assert not await tree.settle_rebuild("ana", "r0")  # another rebuild's: it stays
        assert await tree.rebuilding_users() == ["ana"]
        assert await tree.settle_rebuild("ana", "r1")
        assert await tree.rebuilding_users() == []
        assert await tree.rebuild_job("ana") == finished  # the status stays readable

    async def test_an_unfinished_rebuild_is_never_settled(self, tree: TreeStore) -> None:
        old = RebuildJob("r1", None, None, tuple(Level), 1, 0, 1, 1, True)
        new = RebuildJob("r2", None, None, tuple(Level), 1, 0, plan=RebuildPlan(("a",), ()))
        for job in (old, new):  # a new rebuild committed after a reader saw the old one
            await tree.commit_user(
                UserCommit(
                    "ana", state=state(), seen={}, nodes=(), outbox=(), due=None, rebuild=job
                )
            )
        assert not await tree.settle_rebuild("ana", "r1")
        assert not await tree.settle_rebuild("ana", "r2")
        assert await tree.rebuilds_due(LATER, 10) == ["ana"]

    async def test_forgetting_a_user_drops_its_rebuild(self, tree: TreeStore) -> None:
        for user in ("an*", "an"):
            job = RebuildJob("r1", None, None, tuple(Level), 1, 0, plan=RebuildPlan(("a",), ()))
            await tree.commit_user(
                UserCommit(user, state=state(), seen={}, nodes=(), outbox=(), due=None, rebuild=job)
            )
        await tree.forget("an*", Tombstone(1.0), None)
        assert await tree.rebuild_job("an*") is None
        assert await tree.rebuilding_users() == ["an"]
        assert await tree.rebuild_job("an") is not None

    # --- segmenter state -------------------------------------------------------------------

    async def test_state_is_none_until_committed_then_the_last_committed(
        self, tree: TreeStore
    ) -> None:
        assert await tree.load_state("ana") is None
        await commit(tree, window_state=state(2))
        await commit(tree, window_state=state(2, 3))
        assert await tree.load_state("ana") == state(2, 3)
        assert await tree.load_state("mira") is None

    async def test_progress_reads_the_last_mark_of_each_partition_asked(
        self, tree: TreeStore
    ) -> None:
        assert await tree.progress([0, 1]) == {}
        await tree.mark_progress({0: 12, 1: 3})
        await tree.mark_progress({0: 15})
        assert await tree.progress([0, 1, 2, 0]) == {0: 15, 1: 3}

    async def test_progress_is_kept_per_topic_the_shared_topics_as_before(
        self, tree: TreeStore
    ) -> None:
        await tree.mark_progress({0: 12, 1: 3})
        await tree.mark_progress({0: 40, 2: 5}, topic="t.turns.v1.acme")
        await tree.mark_progress({0: 7}, topic="t.turns.v1.globex")
        assert await tree.progress([0, 1, 2]) == {0: 12, 1: 3}
        assert await tree.progress([0, 1, 2], topic="t.turns.v1.acme") == {0: 40, 2: 5}
        assert await tree.progress([0, 1], topic="t.turns.v1.globex") == {0: 7}
        assert await tree.progress([0], topic="t.turns.v1.initech") == {}
        await tree.mark_progress({0: 13})
        assert await tree.progress([0], topic="t.turns.v1.acme") == {0: 40}

    async def test_held_messages_are_the_pending_and_held_turns_of_the_state(
        self, tree: TreeStore
    ) -> None:
        assert await tree.held_messages("ana") == HeldMessages()
        held = {
            **state(2),
            "pending": [{"type": "turn.v1", "event_id": "q1"}],
            "held": [{"type": "turn.v1", "event_id": "q3"}],
        }
        await commit(tree, window_state=held)
        assert await tree.held_messages("ana") == HeldMessages(("q1",), ("q3",))
        assert await tree.held_messages("mira") == HeldMessages()

    async def test_a_snapshot_reads_what_a_step_needs_as_committed(self, tree: TreeStore) -> None:
        empty = await tree.load_user("ana", ["e1"])
        assert (empty.stored, empty.state, empty.tombstone) == (False, None, None)
        assert (empty.seen, empty.forgotten, empty.expiries, empty.outbox) == ({}, set(), (), ())
        windows = initial_state("ana", "Europe/Paris")
        event = {"topic": "memories", "key": "ana", "value": {"id": "l1"}}
        await tree.commit_user(
            UserCommit(
                "ana",
                encode_state(windows),
                seen={"e1": 12, "e2": 0},
                outbox=(event,),
                forgotten=("f1",),
                expiring={"e1": T0, "e2": T0 - timedelta(days=1)},
            )
        )
        snap = await tree.load_user("ana", ["e1", "f1", "new"])
        assert (snap.stored, snap.state, snap.tombstone) == (True, windows, None)
        assert (snap.seen, snap.forgotten) == ({"e1": 12}, {"f1"})
        assert snap.expiries == (
            ("e2", (T0 - timedelta(days=1)).timestamp()),
            ("e1", T0.timestamp()),
        )
        assert snap.outbox == (event,)
        assert (await tree.load_user("ana", [])).seen == {}
        await tree.forget("ana", Tombstone(1.0, 0, 3, 2.0), ttl_s=None)
        gone = await tree.load_user("ana", ["e1"])
        assert (gone.stored, gone.seen, gone.tombstone) == (False, {}, Tombstone(1.0, 0, 3, 2.0))

    async def test_a_consolidation_batch_loads_each_users_tombstone_and_outbox(
        self, tree: TreeStore
    ) -> None:
        assert await tree.load_users([]) == {}
        event = {"topic": "memories", "key": "ana", "value": {"id": "d1"}}
        await tree.commit_nodes("ana", [], [event])
        await commit(tree, outbox=({"topic": "windows", "key": "ana", "value": {}},))
        stone = Tombstone(1.0, 0, 3, 2.0)
        await tree.forget("bo", stone, ttl_s=None)
        loaded = await tree.load_users(["ana", "bo", "cy"])
        assert loaded == {
            "ana": ConsolidatorSnapshot(None, (event,)),  # the consolidator's outbox only
            "bo": ConsolidatorSnapshot(stone, ()),
            "cy": ConsolidatorSnapshot(None, ()),
        }

    async def test_seen_markers_are_per_user_and_answer_in_order(self, tree: TreeStore) -> None:
        assert await tree.unseen("ana", []) == []
        await commit(tree, seen=("e1", "e2"))
        await commit(tree, seen=("e3",))
        assert await tree.unseen("ana", ["e1", "new", "e3", "e2"]) == [False, True, False, False]
        assert await tree.unseen("mira", ["e1"]) == [True]

    async def test_seen_markers_keep_the_content_mark_they_were_committed_with(
        self, tree: TreeStore
    ) -> None:
        assert await tree.seen_marks("ana", []) == []
        await commit(tree, seen={"e1": 12345, "e2": 2**21 - 1})
        await commit(tree, seen=("e3",))  # no mark given: 0
        marks = await tree.seen_marks("ana", ["e1", "e2", "e3", "new"])
        assert marks == [12345, 2**21 - 1, 0, None]
        assert await tree.seen_marks("mira", ["e1"]) == [None]

    async def test_a_commit_writes_state_markers_nodes_outbox_and_due_together(
        self, tree: TreeStore
    ) -> None:
        leaf = node("l1", parent="s")
        event = {"topic": "memories", "key": "ana", "value": {"id": "l1"}}
        due = T0 + timedelta(hours=1)
        await commit(tree, seen=("e1",), nodes=(leaf,), outbox=(event,), due=due)
        assert await tree.load_state("ana") == state()
        assert await tree.unseen("ana", ["e1"]) == [False]
        assert await tree.get("ana", "l1") == StoredNode(leaf, "")
        assert await tree.children_ids("ana", "s") == ["l1"]
        assert await tree.outbox("ana", "segmenter") == [event]
        assert await tree.due_users(due) == ["ana"]

    async def test_a_commit_removes_nodes_with_their_links_and_tombstones_messages(
        self, tree: TreeStore
    ) -> None:
        kept, gone = node("l1", parent="s", end=1), node("l2", parent="s", end=2, degraded=True)
        await commit(tree, nodes=(kept, gone))
        await tree.commit_nodes("ana", [StoredNode(gone, "")], [])  # in the degraded set
        assert await tree.forgotten_messages("ana", ["m-l2"]) == [False]
        written = await tree.commit_user(
            UserCommit(
                "ana",
                state=state(),
                seen={},
                nodes=[replace(kept, version=3)],
                outbox=[],
                due=None,
                removed=[gone],
                forgotten=["m-l2", "m-other"],
            )
        )
        assert written
        assert await tree.get("ana", "l2") is None
        assert await tree.children_ids("ana", "s") == ["l1"]
        assert await tree.level_ids("ana", Level.SEGMENT) == ["l1"]
        assert await tree.degraded() == []
        assert [n.version for n in await tree.get_many("ana", ["l1"])] == [3]
        held = await tree.forgotten_messages("ana", ["m-l2", "m-l1", "m-other"])
        assert held == [True, False, True]
        assert await tree.forgotten_messages("mira", ["m-l2"]) == [False]
        assert await tree.forgotten_messages("ana", []) == []

    async def test_the_consolidator_removes_a_node_left_without_children(
        self, tree: TreeStore
    ) -> None:
        session = node("s", Level.SESSION, parent="d", end=5)
        await save(tree, session)
        assert await tree.children_ids("ana", "d") == ["s"]
        assert await tree.commit_nodes("ana", [], [], removed=[session])
        assert await tree.get("ana", "s") is None
        assert await tree.children_ids("ana", "d") == []
        assert await tree.count("ana", Level.SESSION) == 0

    async def test_a_commit_of_another_users_node_writes_nothing(self, tree: TreeStore) -> None:
        mine, theirs = node("n1", Level.SESSION), node("n2", Level.SESSION, user="mira")
        with pytest.raises(ValueError):
            await tree.commit_nodes("ana", [StoredNode(mine, "fp"), StoredNode(theirs, "fp")], [])
        assert await tree.get("ana", "n1") is None
        assert await tree.outbox("ana", "consolidator") == []

    # --- outboxes --------------------------------------------------------------------------

    async def test_an_outbox_keeps_order_and_clears_only_what_was_published(
        self, tree: TreeStore
    ) -> None:
        events = [{"topic": "t", "key": "ana", "value": {"n": i}} for i in range(5)]
        await commit(tree, outbox=tuple(events[:2]))
        await commit(tree, outbox=tuple(events[2:3]))
        assert await tree.outbox("ana", "segmenter") == events[:3]
        published = await tree.outbox("ana", "segmenter")
        await commit(tree, outbox=tuple(events[3:]))  # committed while those were published
        await tree.clear_outbox("ana", len(published), "segmenter")
        assert await tree.outbox("ana", "segmenter") == events[3:]
        await tree.clear_outbox("ana", 0, "segmenter")
        assert await tree.outbox("ana", "segmenter") == events[3:]
        await tree.clear_outbox("ana", 2, "segmenter")
        assert await tree.outbox("ana", "segmenter") == []

    async def test_outboxes_of_several_users_clear_together(self, tree: TreeStore) -> None:
        events = [{"topic": "t", "key": "u", "value": {"n": i}} for i in range(3)]
        await commit(tree, outbox=tuple(events))
        await commit(tree, "mira", outbox=tuple(events[:2]))
        await commit(tree, "noa", outbox=tuple(events[:1]))
        await tree.clear_outboxes({"ana": 2, "mira": 2, "noa": 0}, "segmenter")
        assert await tree.outbox("ana", "segmenter") == events[2:]
        assert await tree.outbox("mira", "segmenter") == []
        assert await tree.outbox("noa", "segmenter") == events[:1]
        await tree.clear_outboxes({}, "segmenter")
        assert await tree.outbox("ana", "segmenter") == events[2:]

    async def test_each_handler_has_its_own_outbox(self, tree: TreeStore) -> None:
        seg = {"topic": "windows", "key": "ana", "value": {"from": "segmenter"}}
        con = {"topic": "memories", "key": "ana", "value": {"from": "consolidator"}}
        await commit(tree, outbox=(seg,))
        await tree.commit_nodes("ana", [StoredNode(node("n", Level.SESSION), "fp")], [con])
        assert await tree.outbox("ana", "segmenter") == [seg]
        assert await tree.outbox("ana", "consolidator") == [con]
        await tree.clear_outbox("ana", 1, "consolidator")
        assert await tree.outbox("ana", "segmenter") == [seg]
        assert await tree.outbox("mira", "segmenter") == []

    # --- nodes -----------------------------------------------------------------------------

    async def test_a_node_reads_back_whole_with_its_fingerprint(self, tree: TreeStore) -> None:
        session = node("s", Level.SESSION, parent="d", end=5)
        await save(tree, session, fingerprint="abc")
        assert await tree.get("ana", "s") == StoredNode(session, "abc")
        assert await tree.get("ana", "missing") is None
        assert await tree.get("mira", "s") is None
        rewritten = replace(session, version=3, text="new")
        await save(tree, rewritten, fingerprint="def")
        assert await tree.get("ana", "s") == StoredNode(rewritten, "def")
        assert await tree.count("ana", Level.SESSION) == 1

    async def test_get_many_keeps_the_order_asked_and_skips_the_missing(
        self, tree: TreeStore
    ) -> None:
        a, b = node("a"), node("b", end=1)
        await save(tree, a, b)
        assert await tree.get_many("ana", ["b", "missing", "a"]) == [b, a]
        assert await tree.get_many("ana", []) == []
        assert await tree.get_many("mira", ["a"]) == []

    async def test_get_with_ancestors_reads_the_whole_line_up_fresh(self, tree: TreeStore) -> None:
        month, week = node("m", Level.MONTH), node("w", Level.WEEK, parent="m")
        day, session = node("d", Level.DAY, parent="w"), node("s", Level.SESSION, parent="d")
        await save(tree, month, week, day, session, node("s2", Level.SESSION, parent="d"))
        got = await tree.get_with_ancestors("ana", ["s2", "missing", "s"])
        assert [n.id for n in got[:2]] == ["s2", "s"]  # the nodes asked for first
        assert sorted(n.id for n in got) == ["d", "m", "s", "s2", "w"], [n.id for n in got]
        # Read again after the day moved to another week: the new line, never the one seen.
        other = node("w2", Level.WEEK, parent="m", end=1)
        await save(tree, other, replace(day, parent_id="w2", version=2))
        again = {n.id: n for n in await tree.get_with_ancestors("ana", ["s"])}
        assert sorted(again) == ["d", "m", "s", "w2"]
        assert again["d"].version == 2
        assert await tree.get_with_ancestors("mira", ["s"]) == []

    async def test_a_node_moved_to_another_parent_leaves_the_old_ones_children(
        self, tree: TreeStore
    ) -> None:
        """A late first message renames its session: its leaves are written again under the
        new L2, the old one keeps none of them (and is then removed as childless); a leaf
        the cut replaces goes, and its message is found in the leaf that now holds it."""
        stays, moves = node("l1", parent="old", end=1), node("l2", parent="old", end=2)
        alone = node("l3", parent="old", end=3)
        await commit(tree, nodes=(stays, moves, alone))
        moved = replace(moves, parent_id="new", version=3)
        paired = replace(node("l4", parent="new", end=4), source_ids=("m-l3", "m-l4"))
        written = await tree.commit_user(
            UserCommit("ana", state=state(), nodes=[moved, paired], moved=[moves], removed=[alone])
        )
        assert written
        assert await tree.children_ids("ana", "old") == ["l1"]
        assert await tree.children_ids("ana", "new") == ["l2", "l4"]
        assert [n.parent_id for n in await tree.get_many("ana", ["l2"])] == ["new"]
        assert await tree.get("ana", "l3") is None
        assert await tree.leaves_citing("ana", ["m-l2", "m-l3"]) == ["l2", "l4"]

    async def test_children_are_the_nodes_stored_under_a_parent(self, tree: TreeStore) -> None:
        await save(tree, node("b", parent="p"), node("a", parent="p"), node("c", parent="q"))
        await commit(tree, nodes=(node("d", parent="p"),))
        assert await tree.children_ids("ana", "p") == ["a", "b", "d"]
        assert await tree.children_ids("ana", "nobody") == []
        assert await tree.children_ids("mira", "p") == []

    async def test_recent_gives_the_newest_before_a_time_oldest_first(
        self, tree: TreeStore
    ) -> None:
        await save(tree, *(node(f"n{i}", Level.SESSION, end=10 * i) for i in range(5)))
        await save(tree, node("tie", Level.SESSION, end=20), node("leaf", end=45))
        ids = [n.id for n in await tree.recent("ana", Level.SESSION, 3)]
        assert ids == ["tie", "n3", "n4"]
        before = T0 + timedelta(minutes=30)  # exclusive: n3 ends exactly then
        ids = [n.id for n in await tree.recent("ana", Level.SESSION, 3, before=before)]
        assert ids == ["n1", "n2", "tie"]
        assert await tree.recent("ana", Level.SESSION, 0) == []
        assert await tree.recent("ana", Level.DAY, 3) == []

    async def test_level_ids_range_over_ends_inclusive_in_pages(self, tree: TreeStore) -> None:
        await save(tree, *(node(f"n{i}", end=i) for i in range(6)))
        lo, hi = (T0 + timedelta(minutes=m) for m in (1, 4))
        assert await tree.level_ids("ana", Level.SEGMENT, lo.timestamp(), hi.timestamp()) == [
            "n1",
            "n2",
            "n3",
            "n4",
        ]
        page = await tree.level_ids("ana", Level.SEGMENT, offset=2, limit=3)
        assert page == ["n2", "n3", "n4"]
        assert await tree.level_ids("ana", Level.SESSION) == []
        assert await tree.count("ana", Level.SEGMENT) == 6
        assert await tree.count("mira", Level.SEGMENT) == 0

    async def test_the_profile_is_the_month_that_ends_last(self, tree: TreeStore) -> None:
        assert await tree.profile("ana") is None
        may, april = node("may", Level.MONTH, end=60), node("april", Level.MONTH, end=0)
        await save(tree, may)
        await save(tree, april)  # a late April rewritten after May: May is still the profile
        assert await tree.profile("ana") == may
        assert await tree.profile("mira") is None

    # --- across users ----------------------------------------------------------------------

    async def test_due_users_are_those_due_by_now_earliest_first(self, tree: TreeStore) -> None:
        await commit(tree, "late", due=T0 + timedelta(minutes=5))
        await commit(tree, "early", due=T0 - timedelta(minutes=5))
        await commit(tree, "exact", due=T0)
        await commit(tree, "future", due=T0 + timedelta(days=1))
        await commit(tree, "idle", due=T0 + timedelta(days=1))
        await commit(tree, "idle", due=None)  # nothing left to close: out of the index
        now = T0 + timedelta(minutes=5)
        assert await tree.due_users(now) == ["early", "exact", "late"]
        assert await tree.due_users(now, limit=2) == ["early", "exact"]

    async def test_open_windows_are_counted_per_level_over_due_users(self, tree: TreeStore) -> None:
        await commit(tree, "ana", due=T0, window_state=state(2, 3, 4, 5))
        await commit(tree, "mira", due=T0, window_state=state(3, 4, 5))
        await commit(tree, "done", due=None, window_state=state())
        counts = await tree.open_window_counts()
        assert {level: counts[level] for level in (2, 3, 4, 5)} == {2: 1, 3: 2, 4: 2, 5: 2}

    async def test_the_degraded_set_follows_each_nodes_last_write(self, tree: TreeStore) -> None:
        await save(tree, node("s", Level.SESSION, degraded=True))
        await save(tree, node("d", Level.DAY, user="a|b", degraded=True))
        await save(tree, node("ok", Level.SESSION))
        assert sorted(await tree.degraded()) == [("ana", "s"), ("a|b", "d")]
        await save(tree, node("s", Level.SESSION))  # the model wrote it this time
        assert await tree.degraded() == [("a|b", "d")]
        assert len(await tree.degraded(limit=1)) == 1

    async def test_degraded_markers_stay_apart_when_ids_hold_the_separator(
        self, tree: TreeStore
    ) -> None:
        # Joined with "|", both would read "pipe|x|n": one marker for two nodes.
        await save(tree, node("x|n", Level.SESSION, user="pipe", degraded=True))
        await save(tree, node("n", Level.SESSION, user="pipe|x", degraded=True))
        assert sorted(await tree.degraded()) == [("pipe", "x|n"), ("pipe|x", "n")]
        await tree.delete_user("pipe")
        assert await tree.degraded() == [("pipe|x", "n")]
        await tree.delete_user("pipe|x")
        assert await tree.degraded() == []

    async def test_forgetting_a_user_removes_everything_of_that_user_only(
        self, tree: TreeStore
    ) -> None:
        for user in AWKWARD_USERS:
            leaf = node("l", user=user, parent="s")
            event = {"topic": "t", "key": user, "value": {}}
            await commit(tree, user, seen=("e1",), nodes=(leaf,), outbox=(event,), due=T0)
            session = node("s", Level.SESSION, user=user, degraded=True)
            await tree.commit_nodes(user, [StoredNode(session, "fp")], [event])
        assert await tree.delete_user("nobody") == 0
        for gone, user in enumerate(AWKWARD_USERS):
            assert await tree.delete_user(user) > 0
            assert await tree.load_state(user) is None
            assert await tree.unseen(user, ["e1"]) == [True]
            assert await tree.get_many(user, ["l", "s"]) == []
            assert await tree.children_ids(user, "s") == []
            assert await tree.count(user, Level.SEGMENT) == 0
            assert await tree.outbox(user, "segmenter") == []
            assert await tree.outbox(user, "consolidator") == []
            assert await tree.delete_user(user) == 0
            kept = AWKWARD_USERS[gone + 1 :]
            assert sorted(await tree.due_users(T0)) == sorted(kept)
            assert sorted(u for u, _ in await tree.degraded()) == sorted(kept)
            for other in kept:
                assert [n.id for n in await tree.get_many(other, ["l", "s"])] == ["l", "s"]
                assert await tree.unseen(other, ["e1"]) == [False]
                assert len(await tree.outbox(other, "segmenter")) == 1

    async def test_a_forget_removes_one_user_and_leaves_a_tombstone(self, tree: TreeStore) -> None:
        for user in AWKWARD_USERS:
            leaf = node("l", user=user, parent="s")
            await commit(tree, user, seen=("e1",), nodes=(leaf,), outbox=(), due=T0)
            await tree.commit_nodes(user, [StoredNode(node("s", Level.SESSION, user=user), "")], [])
        stone = Tombstone(forgotten_at=T0.timestamp(), partition=3, offset=41, record_ts=1.5)
        for gone, user in enumerate(AWKWARD_USERS):
            assert await tree.tombstone(user) is None
            report = await tree.forget(user, stone, ttl_s=600)
            assert (report.nodes, report.tombstone_ttl_s) == (2, 600)
            assert report.redis_keys > 0
            assert await tree.tombstone(user) == stone
            assert await tree.get_many(user, ["l", "s"]) == []
            assert await tree.load_state(user) is None
            for other in AWKWARD_USERS[gone + 1 :]:
                assert await tree.tombstone(other) is None
                assert [n.id for n in await tree.get_many(other, ["l", "s"])] == ["l", "s"]
                assert await tree.children_ids(other, "s") == ["l"]

    async def test_a_guarded_commit_is_dropped_once_the_user_is_forgotten(
        self, tree: TreeStore
    ) -> None:
        before = Guard(tombstone=None)
        leaf = node("l", parent="s")
        written = await tree.commit_user(
            UserCommit(
                "ana",
                state=state(),
                seen={"e1": 0},
                nodes=[leaf],
                outbox=[],
                due=None,
                guard=before,
            )
        )
        assert written
        stone = Tombstone(forgotten_at=T0.timestamp())
        await tree.forget("ana", stone, ttl_s=None)
        # Work that read the tree before the forget may not write it back.
        late = StoredNode(node("s", Level.SESSION), "fp")
        assert not await tree.commit_nodes("ana", [late], [{"k": 1}], guard=before)
        assert not await tree.commit_user(
            UserCommit(
                "ana", state=state(), seen={"e2": 0}, nodes=[leaf], outbox=[], due=T0, guard=before
            )
        )
        assert await tree.get_many("ana", ["l", "s"]) == []
        assert await tree.outbox("ana", "consolidator") == []
        assert await tree.load_state("ana") is None
        assert await tree.due_users(T0) == []
        # Work that began after the forget (a new turn of the user) writes as usual.
        assert await tree.commit_nodes("ana", [late], [], guard=Guard(tombstone=stone))
        assert [n.id for n in await tree.get_many("ana", ["s"])] == ["s"]

    async def test_l1s_index_their_messages_through_rewrites_and_removals(
        self, tree: TreeStore
    ) -> None:
        pair = replace(node("l1", parent="s"), source_ids=("q1", "a1"))
        alone = replace(node("l2", parent="s", end=2), source_ids=("q2",))
        session = replace(node("s", Level.SESSION), source_ids=("q1", "a1", "q2"))
        await commit(tree, nodes=(pair, alone))
        await tree.commit_nodes("ana", [StoredNode(session, "")], [])  # L2s index nothing
        assert await tree.leaves_citing("ana", ["a1", "q2", "q1", "nope"]) == ["l1", "l2"]
        assert await tree.leaves_citing("ana", []) == []
        assert await tree.leaves_citing("mira", ["q1"]) == []
        # q1 forgotten: l1 is written again from a1; l2 loses its only message and goes.
        await tree.commit_user(
            UserCommit(
                "ana",
                state=state(),
                seen={},
                nodes=[replace(pair, source_ids=("a1",), version=3)],
                outbox=[],
                due=None,
                removed=[alone],
                forgotten=["q1", "q2"],
            )
        )
        assert await tree.leaves_citing("ana", ["q1", "q2"]) == []
        assert await tree.leaves_citing("ana", ["a1"]) == ["l1"]
        await tree.delete_user("ana")
        assert await tree.leaves_citing("ana", ["a1"]) == []

    async def test_message_deadlines_are_kept_per_user_earliest_first_until_forgotten(
        self, tree: TreeStore
    ) -> None:
        deadlines = {"late": T0 + timedelta(days=2), "soon": T0, "mid": T0 + timedelta(hours=1)}
        for user in ("an*", "an"):
            await tree.commit_user(
                UserCommit(
                    user, state=state(), seen={}, nodes=[], outbox=[], due=T0, expiring=deadlines
                )
            )
        expected = [(k, deadlines[k].timestamp()) for k in ("soon", "mid", "late")]
        assert await tree.expiries("an*") == expected
        assert await tree.expiries("an*", limit=1) == expected[:1]
        await tree.commit_user(
            UserCommit(
                "an*", state=state(), seen={}, nodes=[], outbox=[], due=None, forgotten=["soon"]
            )
        )
        assert await tree.expiries("an*") == expected[1:]
        assert await tree.expiries("an") == expected  # another user's schedule is its own
        await tree.forget("an*", Tombstone(forgotten_at=T0.timestamp()), ttl_s=60)
        assert await tree.expiries("an*") == []
        assert await tree.expiries("an") == expected
