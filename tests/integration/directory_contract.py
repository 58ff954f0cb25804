"""Behaviour every `ports.UserDirectory` shows (RedisTree and the unit tests' FakeTree): a
search by id prefix in id order, and one user's overview, both read from indexes."""

from __future__ import annotations

from datetime import timedelta

from memstream.contracts.codec import encode_state
from memstream.domain.forgetting import Tombstone
from memstream.domain.models import Level, Turn, Window
from memstream.domain.user_overview import PendingWindow
from memstream.domain.windows import OpenWindow, UserWindows
from memstream.ports import TreeStore

from .tree_contract import AWKWARD_USERS, T0, commit, node, save

USERS = (*AWKWARD_USERS, "ana", "anb", "bo", "émile")


def held_turn() -> Turn:
    return Turn("e9", "ana", "s2", 1, "Ana", "user", "Still there?", T0 + timedelta(hours=2))


def windows() -> UserWindows:
    session = Window("ana", Level.SESSION, T0, T0 + timedelta(hours=1), "s1")
    return UserWindows(
        user_id="ana",
        tz="UTC",
        pending=(held_turn(),),
        open_windows={"s1": OpenWindow(session, "n-s1", None)},
    )


class DirectoryContract:
    async def test_users_are_found_by_prefix_in_id_order_a_page_at_a_time(
        self, tree: TreeStore
    ) -> None:
        assert await tree.users() == []
        for user in USERS:
            await commit(tree, user)
        assert [u.user_id for u in await tree.users()] == sorted(USERS)
        found = [u.user_id for u in await tree.users("an")]
        assert found == ["an", "an*", "an?", "ana", "anb"]  # glob characters mean nothing
        assert [u.user_id for u in await tree.users("an", after="an*", limit=2)] == ["an?", "ana"]
        assert [u.user_id for u in await tree.users("an", after="anb")] == []
        assert [u.user_id for u in await tree.users("[a")] == ["[a]na"]
        assert [u.user_id for u in await tree.users("é")] == ["émile"]
        assert [u.user_id for u in await tree.users("a", after="0", limit=1)] == ["a"]

    async def test_a_listing_says_how_many_exchanges_and_when_last_written(
        self, tree: TreeStore
    ) -> None:
        await commit(tree, "ana", seen=("e1",), nodes=(node("l1"), node("l2", end=5)))
        await commit(tree, "bo")
        ana, bo = await tree.users()
        assert (ana.user_id, ana.memories) == ("ana", 2) and ana.last_seen is not None
        assert (bo.user_id, bo.memories, bo.last_seen) == ("bo", 0, None)

    async def test_a_forgotten_user_is_no_longer_listed_nor_known(self, tree: TreeStore) -> None:
        await commit(tree, "ana", nodes=(node("l1"),))
        await commit(tree, "bo")
        await tree.forget("ana", Tombstone(1.0, 0, 3, 2.0), ttl_s=None)
        assert [u.user_id for u in await tree.users()] == ["bo"]
        assert await tree.user_overview("ana") is None

    async def test_register_users_lists_every_user_with_state(self, tree: TreeStore) -> None:
        await commit(tree, "ana")
        await tree.register_users()
        assert [u.user_id for u in await tree.users()] == ["ana"]

    async def test_an_overview_reads_counts_span_pending_windows_and_degraded_nodes(
        self, tree: TreeStore
    ) -> None:
        assert await tree.user_overview("ana") is None
        leaves = (node("l1", end=1, parent="s1"), node("l2", end=9, parent="s1"))
        await commit(tree, "ana", seen=("e1",), nodes=leaves, window_state=encode_state(windows()))
        await save(tree, node("s1", Level.SESSION, end=10, degraded=True))
        await save(tree, node("x", Level.SESSION, user="bo", degraded=True))
        overview = await tree.user_overview("ana")
        assert overview is not None
        assert dict(overview.counts) == {Level.SEGMENT: 2, Level.SESSION: 1} | {
            level: 0 for level in (Level.DAY, Level.WEEK, Level.MONTH)
        }
        assert (overview.first_at, overview.last_at) == (leaves[0].t_start, leaves[1].t_end)
        assert overview.last_written_at is not None
        assert overview.pending_windows == (
            PendingWindow(Level.SEGMENT, held_turn().ts, None),
            PendingWindow(Level.SESSION, T0, T0 + timedelta(hours=1)),
        )
        assert overview.degraded == 1
