"""Knowledge stepped forward through the change log reads exactly as knowledge derived whole:
over random histories of L1s written, written again and removed, and of users forgotten,
RedisTree with its cache (stepping), RedisTree without one (deriving every read whole) and
the unit tests' FakeTree answer every read alike."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
import redis.asyncio as aioredis
from tests.unit.domain.knowledge_histories import History
from tests.unit.fakes import FakeTree

from memstream.adapters.redis import keys, knowledge, knowledge_log
from memstream.adapters.redis.tree import RedisTree
from memstream.contracts.knowledge_codec import decode_fact
from memstream.domain.facts import AtomicFact
from memstream.domain.forgetting import Tombstone
from memstream.domain.knowledge_view import EntitiesView, FactsView
from memstream.ports import TreeStore
from memstream.settings import Settings

from .knowledge_contract import write

pytestmark = pytest.mark.integration

FAR = datetime(2030, 1, 1, tzinfo=UTC)


class Trees:
    """The same user's data read three ways; `stepping` counts its whole reads."""

    def __init__(self, client: aioredis.Redis, namespace: str) -> None:
        self.stepping = RedisTree(client, namespace)
        self.whole = RedisTree(client, namespace, knowledge_cache_users=0)
        self.fake = FakeTree()
        self.whole_reads = 0
        read = self.stepping._read

        async def counted(user_id: str, hash_key: str) -> Any:
            self.whole_reads += 1
            return await read(user_id, hash_key)

        self.stepping._read = counted  # type: ignore[method-assign]

    async def commit(self, written: list[Any], removed: list[Any]) -> None:
        for tree in (self.stepping, self.fake):
            assert await write(tree, *written, removed=tuple(removed))

    async def forget(self) -> None:
        for tree in (self.stepping, self.fake):
            await tree.forget("ana", Tombstone(1.0), ttl_s=None)

    async def assert_alike(self) -> None:
        answers = [await _answers(t) for t in (self.stepping, self.whole, self.fake)]
        assert answers[0] == answers[1] == answers[2]
        held = self.stepping.knowledge_cache
        facts, entities = held.facts("ana"), held.entities("ana")
        if facts is not None and entities is not None:  # what is held is the view derived whole
            _, raw_facts = await self.whole._read("ana", keys.FACTS)
            assert facts.view == FactsView.of(
                {k.decode(): tuple(_facts(v)) for k, v in raw_facts.items()}
            )
            assert entities.view.index == (await self.whole.entity_index("ana"))
            assert entities.view == EntitiesView.of(entities.view.index.leaves)


def _facts(doc: bytes) -> list[AtomicFact]:
    return [decode_fact(f) for f in json.loads(doc)]


async def _answers(tree: TreeStore) -> tuple[Any, ...]:
    said = await tree.facts_said("ana", FAR)
    return (
        await tree.facts("ana"),
        await tree.fact_versions("ana"),
        await tree.entities("ana"),
        (await tree.entity_index("ana")).keys,
        sorted(said, key=lambda f: (f.fact_id, f.source_ids)),
    )


@pytest.fixture
async def trees(stack_settings: Settings) -> AsyncIterator[Trees]:
    client = aioredis.from_url(stack_settings.redis.url)
    namespace = f"knowledge-steps-{uuid.uuid4().hex[:12]}"
    try:
        yield Trees(client, namespace)
    finally:
        found = [k async for k in client.scan_iter(match=f"{namespace}:*")]
        if found:
            await client.delete(*found)
        await client.aclose()


@pytest.mark.parametrize("seed", range(4))
async def test_random_histories_read_alike_stepped_or_whole(trees: Trees, seed: int) -> None:
    rng = random.Random(seed)
    history = History(rng)
    reads = 0
    for number in range(80):
        if number in (40, 41) and seed % 2:
            await trees.forget()
            history.held.clear()
            continue
        await trees.commit(*history.step())
        if rng.random() < 0.5:
            await trees.assert_alike()
            reads += 1
    await trees.assert_alike()
    # Every read stepped but the first of each part, and the first after a forget.
    assert trees.whole_reads == 2 * (1 + seed % 2)
    assert reads > 20


async def test_a_log_that_no_longer_reaches_back_reads_whole(trees: Trees) -> None:
    history = History(random.Random(7))
    await trees.commit(*history.step())
    await trees.assert_alike()
    assert trees.whole_reads == 2
    for _ in range(knowledge_log.KEPT + 1):  # the revision held falls out of the log
        await trees.commit(*history.step())
    await trees.assert_alike()
    assert trees.whole_reads == 4
    await trees.commit(*history.step())
    await trees.assert_alike()
    assert trees.whole_reads == 4  # stepped again from there


async def test_a_change_too_large_to_name_its_leaves_reads_whole(trees: Trees) -> None:
    history = History(random.Random(8))
    await trees.commit(*history.step())
    await trees.assert_alike()
    many = [history._new() for _ in range(knowledge_log.MOST_LEAVES + 1)]
    history.held.update({n.id: n for n in many})
    await trees.commit(many, [])
    log = trees.stepping._key("ana", keys.KNOWLEDGE_CHANGES)
    entries = await trees.stepping._r.lrange(log, 0, -1)
    assert b'"leaves": null' in entries[-1]
    await trees.assert_alike()
    assert trees.whole_reads == 4


async def test_data_written_before_the_log_reads_whole_then_steps(trees: Trees) -> None:
    history = History(random.Random(9))
    await trees.commit(*history.step())
    await trees.assert_alike()
    await trees.commit(*history.step())
    await trees.stepping._r.delete(trees.stepping._key("ana", keys.KNOWLEDGE_CHANGES))
    await trees.assert_alike()  # the revision held is in no log: whole
    assert trees.whole_reads == 4
    await trees.commit(*history.step())  # the log starts after the revision held: whole
    await trees.assert_alike()
    assert trees.whole_reads == 6
    await trees.commit(*history.step())
    await trees.assert_alike()
    assert trees.whole_reads == 6  # from there on, stepped


class RecordingClient:
    """The Redis client, recording every command a tree sends (pipelined or not)."""

    def __init__(self, client: aioredis.Redis) -> None:
        self._client = client
        self.sent: list[tuple[Any, ...]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def get(self, key: str) -> Any:
        self.sent.append(("GET", key))
        return await self._client.get(key)

    def pipeline(self, *args: Any, **kwargs: Any) -> Any:
        pipe = self._client.pipeline(*args, **kwargs)
        execute = pipe.execute

        async def recorded(*a: Any, **k: Any) -> Any:
            self.sent.extend(command for command, _ in pipe.command_stack)
            return await execute(*a, **k)

        pipe.execute = recorded
        return pipe

    async def evalsha(self, sha: str, count: int, *args: Any) -> Any:
        reply = await self._client.evalsha(sha, count, *args)
        self.sent.append(("EVALSHA", reply))
        return reply

    async def eval(self, script: str, count: int, *args: Any) -> Any:
        reply = await self._client.eval(script, count, *args)
        self.sent.append(("EVAL", reply))
        return reply


async def test_a_read_after_a_write_reads_only_the_leaves_the_write_changed(
    trees: Trees,
) -> None:
    history = History(random.Random(11))
    while len(history.held) < 150:
        written = [history._new() for _ in range(10)]
        history.held.update({n.id: n for n in written})
        await trees.commit(written, [])
    recording = RecordingClient(trees.stepping._r)
    reader = RedisTree(recording, trees.stepping._ns)  # type: ignore[arg-type]
    await reader.fact_versions("ana"), await reader.entity_index("ana")
    written = [history._new(), history._rewrite(history.held["l0003"])]
    await trees.commit(written, [])
    await trees.stepping._r.script_load(knowledge._STEPPED)  # a server that has run it
    recording.sent.clear()
    await reader.fact_versions("ana"), await reader.entity_index("ana")
    # Per part, one round trip: the revision, the log and the L1s it names, in one script.
    assert [command[0] for command in recording.sent] == ["EVALSHA"] * 2
    read = [{i.decode() for i in reply[2]} for _, reply in recording.sent]
    assert read == [{n.id for n in written}] * 2
    await trees.assert_alike()


async def test_a_server_without_the_script_is_sent_it_whole(trees: Trees) -> None:
    history = History(random.Random(5))
    await trees.commit(*history.step())
    await trees.assert_alike()  # the cache holds the first revision
    await trees.stepping._r.script_flush()
    await trees.commit(*history.step())
    await trees.assert_alike()
    assert trees.whole_reads == 2  # stepped, not derived whole, once the script was sent
