"""A user's overview and forget cost the same Redis traffic however many degraded nodes the
other users have.

The degraded markers of every user share one set (`ms:degraded`: what the clock retries).
A user's overview counts the user's own index instead (`ms:{u}:degraded`), and a forget
removes the user's markers by node id: neither reads the set of all users, which grows with
the store. Measured through a client that counts the replies it reads and their bytes, on a
real Redis (the embedded stack's): a read of that set on either path fails this test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from memstream.adapters.redis import keys
from memstream.adapters.redis.tree import RedisTree
from memstream.domain.forgetting import Tombstone
from memstream.domain.models import Level, StoredNode
from memstream.settings import Settings

from .redis_traffic import Traffic, counting_client
from .tree_contract import T0, node

pytestmark = pytest.mark.integration

# Another user's degraded nodes: what the store holds besides the measured user.
CROWD = 5000


@pytest.fixture
async def tree(stack_settings: Settings) -> AsyncIterator[RedisTree]:
    async with counting_client(stack_settings.redis.url, "degraded-traffic") as (client, ns):
        yield RedisTree(client, ns)


async def _write_user(tree: RedisTree, user: str) -> None:
    """Two leaves under a session, and three degraded sessions."""
    nodes = [node(f"l{i}", user=user, end=i, parent="s0") for i in range(2)]
    nodes += [node(f"s{i}", Level.SESSION, user=user, end=9, degraded=True) for i in range(3)]
    await tree.commit_nodes(user, [StoredNode(n, "fp") for n in nodes], outbox=[])


async def _overview_and_forget(tree: RedisTree, user: str) -> tuple[int, int]:
    """Replies and bytes read by one overview and one forget of `user`."""
    Traffic.replies = Traffic.bytes = 0
    overview = await tree.user_overview(user)
    assert overview is not None and overview.degraded == 3
    tombstone = Tombstone(T0.timestamp(), 0, 5, T0.timestamp())
    assert (await tree.forget(user, tombstone, ttl_s=600)).nodes == 5
    return Traffic.replies, Traffic.bytes


async def test_an_overview_and_a_forget_read_no_more_in_a_store_of_many_degraded_nodes(
    tree: RedisTree,
) -> None:
    await _write_user(tree, "ana-1")
    alone = await _overview_and_forget(tree, "ana-1")

    crowd = [node(f"c{i}", Level.SESSION, user="crowd", degraded=True) for i in range(CROWD)]
    await tree.commit_nodes("crowd", [StoredNode(n, "fp") for n in crowd], outbox=[])
    await _write_user(tree, "ana-2")  # the same shape, an id of the same length
    among_many = await _overview_and_forget(tree, "ana-2")

    assert among_many == alone
    # What the forget left is the other user's markers, every one.
    assert await tree._r.scard(keys.degraded(tree._ns)) == CROWD
    assert [u for u, _ in await tree.degraded()] == ["crowd"] * 1000
