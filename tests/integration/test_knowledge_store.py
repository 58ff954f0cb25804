"""The knowledge the segmenter commits, in RedisTree (the embedded stack's Redis) and in the
unit tests' FakeTree: one contract."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis
from tests.unit.fakes import FakeTree

from memstream.adapters.redis.tree import RedisTree
from memstream.settings import Settings

from .knowledge_contract import KnowledgeContract

pytestmark = pytest.mark.integration


class TestRedisKnowledge(KnowledgeContract):
    @pytest.fixture
    async def tree(self, stack_settings: Settings) -> AsyncIterator[RedisTree]:
        client = aioredis.from_url(stack_settings.redis.url)
        namespace = f"knowledge-{uuid.uuid4().hex[:12]}"  # no other test sees these keys
        try:
            yield RedisTree(client, namespace)
        finally:
            keys = [k async for k in client.scan_iter(match=f"{namespace}:*")]
            if keys:
                await client.delete(*keys)
            await client.aclose()


class TestFakeKnowledge(KnowledgeContract):
    @pytest.fixture
    def tree(self) -> FakeTree:
        return FakeTree()
