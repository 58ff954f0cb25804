"""RedisTree (a real Redis: the embedded stack's) and the unit tests' FakeTree, one contract."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
import redis.asyncio as aioredis
from tests.unit.fakes import FakeTree

from memstream.adapters.redis import keys
from memstream.adapters.redis.slots import slot_of
from memstream.adapters.redis.tree import RedisTree
from memstream.domain.models import Level
from memstream.settings import Settings

from .directory_contract import DirectoryContract
from .redis_cluster import RedisClusterNodes
from .tree_contract import T0, TreeContract, commit, node, save, scratch_tree

pytestmark = pytest.mark.integration


async def overview_degraded(tree: RedisTree, user_id: str) -> int:
    overview = await tree.user_overview(user_id)
    assert overview is not None
    return overview.degraded


class TestRedisTree(TreeContract, DirectoryContract):
    @pytest.fixture
    async def tree(self, stack_settings: Settings) -> AsyncIterator[RedisTree]:
        async with scratch_tree(stack_settings.redis.url, "contract") as tree:
            yield tree

    async def test_markers_written_before_json_are_still_read_and_forgotten(
        self, tree: RedisTree
    ) -> None:
        node_id = "28537138-4e46-4f24-93e5-56487cd5f71e"
        await save(tree, node(node_id, Level.SESSION, user="pipe|x", degraded=True))
        # As a version before JSON markers and the user's own index left it.
        degraded = tree._across_users(keys.degraded, "pipe|x")
        await tree._r.srem(degraded, keys.degraded_member("pipe|x", node_id))
        await tree._r.sadd(degraded, f"pipe|x|{node_id}")
        await tree._r.delete(tree._key("pipe|x", keys.DEGRADED))
        assert await tree.degraded() == [("pipe|x", node_id)]
        await tree.delete_user("pipe")
        assert len(await tree.degraded()) == 1
        await tree.delete_user("pipe|x")
        assert await tree.degraded() == []

    async def test_markers_of_an_older_version_are_indexed_by_user_once(
        self, tree: RedisTree
    ) -> None:
        for user, node_id in (("ana", "s1"), ("ana", "s2"), ("a|b", "s1")):
            await save(tree, node(node_id, Level.SESSION, user=user, degraded=True))
        await save(tree, node("ok", Level.SESSION))
        degraded = tree._across_users(keys.degraded, "ana")
        await tree._r.srem(degraded, keys.degraded_member("ana", "s2"))
        await tree._r.sadd(degraded, keys.legacy_member("ana", "s2"))  # before JSON
        await tree._r.sadd(degraded, keys.degraded_member("ana", "gone"))  # its node is not
        for user in ("ana", "a|b"):  # as a version before the users' own index left them
            await tree._r.delete(tree._key(user, keys.DEGRADED))
        assert await overview_degraded(tree, "ana") == 0

        assert await tree.index_degraded_by_user() == 3
        assert (await overview_degraded(tree, "ana"), await overview_degraded(tree, "a|b")) == (
            2,
            1,
        )
        assert await tree.index_degraded_by_user() == 0  # marked done: not read again
        await tree._r.delete(keys.degraded_by_user(tree._ns))
        assert await tree.index_degraded_by_user() == 0  # nothing copied twice
        assert await overview_degraded(tree, "ana") == 2
        await save(tree, node("s1", Level.SESSION))  # the model wrote it this time
        assert await overview_degraded(tree, "ana") == 1
        await tree.delete_user("ana")
        # A marker whose node an older version lost names no node and no index entry: the
        # forget, which removes markers by id, leaves it (the clock's retry skips it).
        assert sorted(await tree.degraded()) == [("ana", "gone"), ("a|b", "s1")]

    async def test_l1s_written_before_the_message_index_are_indexed_on_first_use(
        self, tree: RedisTree
    ) -> None:
        old = [replace(node(f"l{i}", end=i), source_ids=(f"q{i}", f"a{i}")) for i in range(3)]
        await commit(tree, nodes=tuple(old))
        await tree._r.delete(f"{tree._ns}:{{ana}}:sources")  # as an older version left them
        new = replace(node("l3", end=3), source_ids=("q3",))
        await commit(tree, nodes=(new,))  # written after the upgrade: indexed at once
        assert await tree.leaves_citing("ana", ["a2", "q0", "q3"]) == ["l0", "l2", "l3"]
        assert await tree._r.hlen(f"{tree._ns}:{{ana}}:sources") == 7 + 1  # and the mark
        assert await tree.leaves_citing("ana", ["q1"]) == ["l1"]  # indexed once for all


class TestRedisTreeOnACluster(TestRedisTree):
    """The same contract on a real three-primary Redis Cluster (its client, its layout)."""

    @pytest.fixture
    async def tree(self, redis_cluster: RedisClusterNodes) -> AsyncIterator[RedisTree]:
        async with scratch_tree(redis_cluster.url, "contract", cluster=True) as tree:
            yield tree

    async def test_the_indexes_across_users_stay_in_each_users_slot(self, tree: RedisTree) -> None:
        users = ("ana", "bo", "cy", "dee")
        for user in users:
            await commit(tree, user=user, due=T0)
        slots = {user: tree._user_slot(user) for user in users}
        assert len(set(slots.values())) > 1  # the users are spread over the slots
        for user, slot in slots.items():
            assert await tree._r.zscore(keys.due(tree._ns, slot), user) == T0.timestamp()
            assert slot_of(keys.due(tree._ns, slot)) == slot
        assert sorted(await tree.due_users(T0)) == sorted(users)


async def test_markers_are_trimmed_past_the_replay_horizon_and_the_count_bound(
    stack_settings: Settings,
) -> None:
    from datetime import UTC, datetime, timedelta

    client = aioredis.from_url(stack_settings.redis.url)
    namespace = f"horizon-{uuid.uuid4().hex[:12]}"
    now = [datetime(2024, 5, 1, tzinfo=UTC)]
    tree = RedisTree(
        client, namespace, seen_horizon=timedelta(days=8), seen_max=5, clock=lambda: now[0]
    )
    try:
        await commit(tree, seen={"old": 7})
        now[0] += timedelta(days=7)
        await commit(tree, seen={"week": 8})
        assert await tree.seen_marks("ana", ["old", "week"]) == [7, 8]  # within the horizon
        now[0] += timedelta(days=2)
        await commit(tree, seen={"new": 9})
        assert await tree.seen_marks("ana", ["old", "week", "new"]) == [None, 8, 9]
        await commit(tree, seen={f"e{i}": i for i in range(10)})
        assert await client.zcard(f"{namespace}:{{ana}}:seen") == 5
        assert await tree.unseen("ana", ["e9", "week"]) == [False, True]  # oldest go first
    finally:
        keys = [k async for k in client.scan_iter(match=f"{namespace}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


async def test_markers_an_older_version_kept_as_a_set_are_still_read(
    stack_settings: Settings,
) -> None:
    client = aioredis.from_url(stack_settings.redis.url)
    namespace = f"legacy-{uuid.uuid4().hex[:12]}"
    tree = RedisTree(client, namespace)
    try:
        await client.sadd(f"{namespace}:{{ana}}:seen", "old1", "old2")
        assert await tree.seen_marks("ana", ["old1", "new"]) == [0, None]
        await commit(tree, seen={"new": 5})
        assert await tree.unseen("ana", ["old1", "old2", "new", "other"]) == [
            False,
            False,
            False,
            True,
        ]
    finally:
        keys = [k async for k in client.scan_iter(match=f"{namespace}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


class TestFakeTree(TreeContract, DirectoryContract):
    @pytest.fixture
    def tree(self) -> FakeTree:
        return FakeTree()


async def test_a_node_rewritten_after_a_read_is_read_anew(stack_settings: Settings) -> None:
    """The decoded-node cache never hands back a node's earlier content."""
    import dataclasses
    from datetime import UTC, datetime

    from memstream.domain.models import Level, MemoryNode

    client = aioredis.from_url(stack_settings.redis.url)
    namespace = f"cache-{uuid.uuid4().hex[:12]}"
    tree = RedisTree(client, namespace, node_cache_size=8)
    at = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)
    node = MemoryNode("n1", "ana", Level.SESSION, at, at, "Ana hiked.", version=1)
    try:
        await tree.save_node(node, fingerprint="")
        assert await tree.get_many("ana", ["n1"]) == [node]
        assert await tree.get_many("ana", ["n1"]) == [node]
        assert tree.node_cache.hits == 1
        rewritten = dataclasses.replace(node, text="Ana hiked twice.", version=2)
        await tree.save_node(rewritten, fingerprint="")
        assert await tree.get_many("ana", ["n1"]) == [rewritten]
    finally:
        keys = [k async for k in client.scan_iter(match=f"{namespace}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()
