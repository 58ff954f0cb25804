"""The users' data keys on the real Redis, and opening sealed records with them
(`adapters/redis/datakeys.py`, `recall/opening.py`; docs/forget-everywhere.md)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from memstream.adapters.redis.tree import RedisTree
from memstream.bootstrap import redis_tree
from memstream.contracts.sealed import seal
from memstream.domain.forgetting import Tombstone
from memstream.recall.opening import EnvelopeOpener
from memstream.settings import Settings

pytestmark = pytest.mark.integration

MEMORY = {"type": "memory.v1", "user_id": "ann", "id": "m1", "text": "Ann's cat is Miso."}


@pytest.fixture
async def tree(settings: Settings) -> AsyncIterator[RedisTree]:
    client = aioredis.from_url(settings.redis.url)
    try:
        yield redis_tree(client, settings)
    finally:
        await client.aclose()


async def test_a_key_is_made_once_and_read_back(tree: RedisTree) -> None:
    first = await tree.data_keys_for_writing(["ann", "bob"])
    again = await tree.data_keys_for_writing(["ann"])
    assert first["ann"] is not None and first["bob"] is not None and first["ann"] != first["bob"]
    assert again == {"ann": first["ann"]}
    assert await tree.data_keys(["ann", "nobody"]) == {"ann": first["ann"], "nobody": None}


async def test_records_open_until_the_forget_and_no_key_is_made_after_it(tree: RedisTree) -> None:
    key = (await tree.data_keys_for_writing(["ann"]))["ann"]
    assert key is not None
    sealed = seal(MEMORY, key)
    plain = {"type": "memory_removed.v1", "user_id": "ann", "ids": ["m1"]}
    moved = {**seal(MEMORY, key), "user_id": "bob"}
    opener = EnvelopeOpener(tree)
    answers = await opener.open([sealed, plain, moved, {**sealed, "v": 9}])
    assert [(a.status, a.value) for a in answers[:2]] == [("opened", MEMORY), ("plain", plain)]
    assert [a.status for a in answers[2:]] == ["forgotten", "invalid"]  # bob has no key
    assert answers[3].reason and "version" in answers[3].reason

    await tree.forget("ann", Tombstone(forgotten_at=time.time()), ttl_s=60)
    [gone] = await opener.open([sealed])
    assert (gone.status, gone.value) == ("forgotten", None)
    # Work that outlives the forget finds no key and cannot make one while the tombstone stands.
    assert await tree.data_keys_for_writing(["ann"]) == {"ann": None}
    assert await tree.data_keys(["ann"]) == {"ann": None}
