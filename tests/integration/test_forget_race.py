"""A forget that lands while the user's windows are being consolidated is final (#12.2),
and forgetting one user touches no other, whatever characters the ids hold (#14.4).

Through the real broker, Redis and Qdrant (in-process engine): the worker consolidates a
user's closed windows; while the first consolidation is under way, `forget.v1` is published
and the test waits until the segmenter has applied it. The consolidation then finishes
against a forgotten user: afterwards no node, point or key of the user exists (only the
tombstone), recall finds nothing, and the turns topic replayed from the start by a new
consumer group does not bring the user back.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memstream.adapters.kafka.lag import consumer_lag
from memstream.bootstrap import Container, build_recall, connect
from memstream.contracts.codec import encode_forget
from memstream.contracts.records import Outbound
from memstream.domain.models import Level, MemoryNode, Summary, Window
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.ports import LanguageModel
from memstream.recall.pipeline import RecallRequest
from memstream.settings import Settings

from .crash_rig import KEPT, publish, synthetic_log
from .trees import user_tree, write_nodes

pytestmark = pytest.mark.integration
USER = KEPT


class ForgetsDuringConsolidation:
    """The model, except that its first consolidation waits for a forget of the user."""

    def __init__(self, inner: LanguageModel, container: Container) -> None:
        self._inner = inner
        self._c = container
        self.raced = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def consolidate(
        self,
        level: Level,
        window: Window,
        children: Sequence[MemoryNode],
        history: Sequence[MemoryNode],
        knowledge: object = None,
    ) -> Summary:
        if not self.raced:
            self.raced += 1
            forget = Outbound(self._c.catalog.turns.name, USER, encode_forget(USER))
            await self._c.publisher.publish([forget])
            async with asyncio.timeout(60):  # a poll with a deadline: the tombstone is in Redis
                while True:
                    if await self._c.tree.tombstone(USER) is not None:
                        break
                    await asyncio.sleep(0.05)
        return await self._inner.consolidate(level, window, children, history)


async def settled(c: Container, group: str, timeout_s: float = 90.0) -> None:
    topics = [c.catalog.turns.name, c.catalog.windows.name]
    async with asyncio.timeout(timeout_s):
        quiet = 0
        while quiet < 3:
            await asyncio.sleep(0.5)
            lag = await consumer_lag(c.settings.broker.bootstrap, group, topics)
            quiet = quiet + 1 if sum(lag.values()) == 0 else 0


async def user_keys(c: Container) -> list[str]:
    prefix = f"{c.settings.redis.namespace}:{{{USER}}}:"
    return sorted(
        [k.decode().removeprefix(prefix) async for k in c.tree._r.scan_iter(prefix + "*")]
    )


async def test_a_forget_during_consolidation_leaves_nothing_of_the_user(
    settings: Settings, tmp_path: Path
) -> None:
    local = settings.model_copy(
        update={"data_dir": tmp_path, "clock_grace_s": 0.0, "clock_interval_s": 0.5}
    )
    async with connect(local) as plain:
        racing = ForgetsDuringConsolidation(plain.llm, plain)
        c = dataclasses.replace(plain, llm=racing)
        await publish(local, [(u, e) for u, e in synthetic_log() if u == USER])
        async with run_parts(c, WRITE_PATH, fast_rebalance=True):
            await settled(c, local.broker.consumer_group)
            assert racing.raced == 1
            assert await c.tree.tombstone(USER) is not None
            for level in Level:
                assert await c.tree.count(USER, level) == 0, level
            assert await c.index.count(USER) == 0
            assert await user_keys(c) == ["tombstone"]
            recall = build_recall(c).pipeline
            found = await recall.recall(RecallRequest(USER, "which topics does Ana like?"))
            assert found.memories == []

        # A new consumer group reads the turns topic from the start: the user stays gone.
        replay = local.model_copy(
            update={"consumer_group": local.broker.consumer_group + "-replay"}
        )
        again = dataclasses.replace(c, settings=replay, llm=plain.llm)
        async with run_parts(again, WRITE_PATH, fast_rebalance=True):
            await settled(again, replay.broker.consumer_group)
        assert await c.index.count(USER) == 0
        assert await user_keys(c) == ["tombstone"]


async def test_forgetting_an_id_with_glob_characters_touches_no_other_user(
    settings: Settings, tmp_path: Path
) -> None:
    # Each id matches others as a glob pattern ("a*" matches "ab", "[a]" matches "a"...).
    users = ["a*", "a?", "[a]", "a", "ab", "a\\"]
    async with connect(settings.model_copy(update={"data_dir": tmp_path})) as c:
        trees = {u: user_tree(u, [[f"{u} said hello", f"{u} said bye"]]) for u in users}
        for nodes in trees.values():
            await write_nodes(c, nodes)

        async def keys_of(user: str) -> list[str]:
            prefix = f"{c.settings.redis.namespace}:{{{user}}}:"
            # Exact prefix test, so the check itself cannot confuse users.
            found = [k.decode() async for k in c.tree._r.scan_iter(count=1000)]
            return sorted(k.removeprefix(prefix) for k in found if k.startswith(prefix))

        before = {u: await keys_of(u) for u in users}
        forgotten = ["a*", "a?", "[a]", "a\\"]  # every pattern matches "a" or "ab", kept
        for gone, user in enumerate(forgotten):
            report = await c.forget_user(user)
            assert report["nodes"] == report["qdrant_points"] == len(trees[user])
            assert report["redis_keys"] == len(before[user])
            assert report["tombstone_ttl_s"] == 14 * 24 * 3600  # turns + windows retention
            assert await keys_of(user) == ["tombstone"]
            assert await c.index.count(user) == 0
            for other in users:
                if other not in forgotten[: gone + 1]:
                    assert await keys_of(other) == before[other], other
                    assert await c.index.count(other) == len(trees[other]), other
