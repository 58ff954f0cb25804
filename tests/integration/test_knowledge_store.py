"""The knowledge the segmenter commits, in RedisTree (the embedded stack's Redis) and in the
unit tests' FakeTree: one contract."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis
from tests.unit.fakes import FakeTree

from memstream.adapters.redis import keys
from memstream.adapters.redis.tree import RedisTree
from memstream.contracts.codec import encode_state
from memstream.domain.forgetting import Tombstone
from memstream.domain.windows import initial_state
from memstream.ports import UserCommit
from memstream.settings import Settings

from .knowledge_contract import BERLIN, MAYA, PORTO, KnowledgeContract, values, write
from .tree_contract import scratch_tree

pytestmark = pytest.mark.integration


class TestRedisKnowledge(KnowledgeContract):
    @pytest.fixture
    async def tree(self, stack_settings: Settings) -> AsyncIterator[RedisTree]:
        async with scratch_tree(stack_settings.redis.url, "knowledge") as tree:
            yield tree


async def revision(tree: RedisTree, user: str = "ana") -> bytes | None:
    return await tree._r.get(tree._key(user, keys.KNOWLEDGE_REVISION))


async def plant_fact(tree: RedisTree, leaf_id: str, value: str) -> None:
    """Porto's fact restated as `value` in February, written behind the store's back with no
    new revision: only a read of the hash sees it."""
    facts_key = tree._key("ana", keys.FACTS)
    [doc] = await tree._r.hmget(facts_key, ["l1"])
    planted = [
        fact
        | {"fact_id": f"{leaf_id}-f", "value": value, "valid_from": "2024-02-01T00:00:00+00:00"}
        for fact in json.loads(doc)
    ]
    await tree._r.hset(facts_key, leaf_id, json.dumps(planted))


async def test_a_read_when_nothing_changed_is_the_kept_one(stack_settings: Settings) -> None:
    async with scratch_tree(stack_settings.redis.url, "knowledge-cache") as tree:
        await write(tree, PORTO)
        facts, index = await tree.facts("ana", MAYA), await tree.entity_index("ana")
        await plant_fact(tree, "l9", "Lisbon")
        assert await tree.facts("ana", MAYA) == facts  # the hash was not read again
        assert await tree.entity_index("ana") is index
        await write(tree, BERLIN)  # a new revision: only the L1 it names is read
        assert values(await tree.fact_history("ana", MAYA, "lives_in")) == ["Porto", "Berlin"]
        assert await tree.entity_index("ana") is not index
        # Without the change log (data written before it), the hashes are read whole.
        await write(tree, BERLIN)
        await tree._r.delete(tree._key("ana", keys.KNOWLEDGE_CHANGES))
        assert values(await tree.fact_history("ana", MAYA, "lives_in")) == [
            "Porto",
            "Lisbon",
            "Berlin",
        ]


async def test_the_revision_changes_with_the_knowledge_and_only_then(
    stack_settings: Settings,
) -> None:
    async with scratch_tree(stack_settings.redis.url, "knowledge-revision") as tree:
        assert await revision(tree) is None
        await write(tree, PORTO)
        first = await revision(tree)
        await tree.commit_user(UserCommit("ana", encode_state(initial_state("ana", "UTC"))))
        assert await revision(tree) == first  # a commit without knowledge
        await write(tree, PORTO)  # the same leaf again: a replay writes, so a new token
        second = await revision(tree)
        assert second is not None and second != first
        await tree.forget("ana", Tombstone(1.0), ttl_s=None)
        assert await revision(tree) is None


async def test_no_cache_derives_every_read(stack_settings: Settings) -> None:
    client = aioredis.from_url(stack_settings.redis.url)
    tree = RedisTree(client, f"knowledge-nocache-{uuid.uuid4().hex[:12]}", knowledge_cache_users=0)
    try:
        await write(tree, PORTO)
        assert values(await tree.facts("ana", MAYA)) == ["Porto"]
        await plant_fact(tree, "l9", "Lisbon")
        assert values(await tree.fact_history("ana", MAYA, "lives_in")) == ["Porto", "Lisbon"]
        assert len(tree.knowledge_cache) == 0
    finally:
        await client.delete(*[k async for k in client.scan_iter(match=f"{tree._ns}:*")])
        await client.aclose()


class TestFakeKnowledge(KnowledgeContract):
    @pytest.fixture
    def tree(self) -> FakeTree:
        return FakeTree()


async def test_a_slot_is_read_through_its_index_and_without_it_the_same(
    stack_settings: Settings,
) -> None:
    async with scratch_tree(stack_settings.redis.url, "knowledge-slots") as tree:
        await write(tree, PORTO, BERLIN)
        # A fact of another slot, in a leaf the slot index does not name: not read.
        await plant_fact(tree, "l9", "Lisbon")
        await tree._r.hset(
            tree._key("ana", keys.FACTS),
            "l9",
            (await tree._r.hget(tree._key("ana", keys.FACTS), "l9")).replace(
                b'"lives_in"', b'"works_at"'
            ),
        )
        indexed = await tree.slot_facts("ana", {(MAYA, "lives_in")}, ())
        assert set(indexed) == {"l1", "l2"}
        # Facts written before the index existed: every fact is read, the same answer.
        await tree._r.delete(tree._key("ana", keys.FACT_SLOTS))
        assert await tree.slot_facts("ana", {(MAYA, "lives_in")}, ()) == indexed
