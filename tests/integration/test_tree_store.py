"""RedisTree (a real Redis: the embedded stack's) and the unit tests' FakeTree, one contract."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis
from tests.unit.fakes import FakeTree

from memstream.adapters.redis.tree import RedisTree
from memstream.settings import Settings

from .tree_contract import TreeContract

pytestmark = pytest.mark.integration


class TestRedisTree(TreeContract):
    @pytest.fixture
    async def tree(self, stack_settings: Settings) -> AsyncIterator[RedisTree]:
        client = aioredis.from_url(stack_settings.redis_url)
        namespace = f"contract-{uuid.uuid4().hex[:12]}"  # no other test sees these keys
        try:
            yield RedisTree(client, namespace)
        finally:
            keys = [k async for k in client.scan_iter(match=f"{namespace}:*")]
            if keys:
                await client.delete(*keys)
            await client.aclose()

    async def test_markers_written_before_json_are_still_read_and_forgotten(
        self, tree: RedisTree
    ) -> None:
        legacy = "pipe|x|28537138-4e46-4f24-93e5-56487cd5f71e"
        await tree._r.sadd(f"{tree._ns}:degraded", legacy)
        assert await tree.degraded() == [("pipe|x", "28537138-4e46-4f24-93e5-56487cd5f71e")]
        await tree.delete_user("pipe")
        assert len(await tree.degraded()) == 1
        await tree.delete_user("pipe|x")
        assert await tree.degraded() == []


class TestFakeTree(TreeContract):
    @pytest.fixture
    def tree(self) -> FakeTree:
        return FakeTree()
