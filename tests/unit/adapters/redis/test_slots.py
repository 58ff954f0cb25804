"""The hash tags that split the indexes across users on a Redis Cluster (`slots`)."""

from __future__ import annotations

import pytest
from redis.crc import key_slot

from memstream.adapters.redis import keys
from memstream.adapters.redis.slots import SLOTS, slot_of, slot_tag


def test_every_slot_has_a_tag_that_redis_places_in_it() -> None:
    tags = [slot_tag(slot) for slot in range(SLOTS)]
    assert [key_slot(f"ms:due:{{{tag}}}".encode()) for tag in tags] == list(range(SLOTS))
    assert len(set(tags)) == SLOTS
    assert all(len(tag) == 5 and set(tag) <= set("@ABCDEFGHIJKLMNO") for tag in tags)


def test_a_users_entries_land_in_the_users_slot() -> None:
    for user in ("ana", "bo", "user-42", "名前", "a|b", "an*"):
        slot = slot_of(keys.user_prefix(user))
        for index in (keys.due, keys.rebuilds, keys.users, keys.degraded):
            assert slot_of(index("ms", slot)) == slot


def test_a_single_primary_keeps_one_key_per_index() -> None:
    assert (keys.due("ms"), keys.users("ms"), keys.degraded("ms")) == (
        "ms:due",
        "ms:users",
        "ms:degraded",
    )


@pytest.mark.parametrize("slot", [-1, SLOTS, 10**6])
def test_a_slot_outside_the_cluster_is_refused(slot: int) -> None:
    with pytest.raises(ValueError, match=r"within 0\.\.16383"):
        slot_tag(slot)


async def test_a_tree_refuses_a_layout_its_client_does_not_speak() -> None:
    from memstream.adapters.redis.connection import open_client
    from memstream.adapters.redis.tree import RedisTree

    # Opening a client connects to nothing: these never reach a server.
    plain = open_client("redis://127.0.0.1:1/0")
    cluster = open_client("redis://127.0.0.1:1/0", cluster=True)
    with pytest.raises(ValueError, match="cluster mode and the client disagree"):
        RedisTree(plain, "ms", cluster=True)
    with pytest.raises(ValueError, match="cluster mode and the client disagree"):
        RedisTree(cluster, "ms", cluster=False)
    assert RedisTree(cluster, "ms", cluster=True) is not None
    await plain.aclose()
    await cluster.aclose()
