"""The knowledge the segmenter commits, in RedisTree (the embedded stack's Redis) and in the
unit tests' FakeTree: one contract."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.unit.fakes import FakeTree

from memstream.adapters.redis.tree import RedisTree
from memstream.settings import Settings

from .knowledge_contract import KnowledgeContract
from .tree_contract import scratch_tree

pytestmark = pytest.mark.integration


class TestRedisKnowledge(KnowledgeContract):
    @pytest.fixture
    async def tree(self, stack_settings: Settings) -> AsyncIterator[RedisTree]:
        async with scratch_tree(stack_settings.redis.url, "knowledge") as tree:
            yield tree


class TestFakeKnowledge(KnowledgeContract):
    @pytest.fixture
    def tree(self) -> FakeTree:
        return FakeTree()
