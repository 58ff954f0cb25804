"""A node written by the offline fallback is consolidated again once the LLM answers.

Real Redis (the embedded stack's), a real qdrant-edge shard and the real consolidator and
clock; only the LLM is scripted: down for the first consolidation, up for the retry.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from memstream.adapters.embedding.embedders import HashingEmbedder
from memstream.adapters.qdrant.edge import EdgeIndex
from memstream.adapters.redis.tree import RedisTree
from memstream.consolidator.handler import Consolidator
from memstream.contracts.codec import decode_window
from memstream.contracts.records import Outbound
from memstream.domain.ids import segment_id, window_node_id
from memstream.domain.models import Level, MemoryNode, Summary, Window, WindowClosed
from memstream.scheduler.clock import ClockTicker
from memstream.settings import Settings

USER = "degraded-user"
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


class ScriptedLLM:
    """Falls back (degraded) until `up` is set, then writes as an LLM would."""

    def __init__(self) -> None:
        self.up = False

    async def consolidate(
        self,
        level: Level,
        window: Window,
        children: Sequence[MemoryNode],
        history: object,
        knowledge: object = None,
    ) -> Summary:
        if not self.up:
            return Summary("offline text", degraded=True)
        return Summary("a summary written by the model", prompt_tokens=50, completion_tokens=9)


class Collected:
    def __init__(self) -> None:
        self.sent: list[Outbound] = []

    async def publish(self, events: Sequence[Outbound]) -> None:
        self.sent.extend(events)


@pytest.fixture
async def tree(settings: Settings) -> AsyncIterator[RedisTree]:
    client = aioredis.from_url(settings.redis.url)
    yield RedisTree(client, settings.redis.namespace)
    await client.aclose()


async def test_degraded_session_is_rewritten_when_the_llm_is_back(
    tree: RedisTree, tmp_path: Path
) -> None:
    index = EdgeIndex.open(tmp_path / "edge", 32)
    await index.ensure_collection()
    llm, published = ScriptedLLM(), Collected()
    consolidator = Consolidator(
        tree=tree,
        index=index,
        embedder=HashingEmbedder(32),
        llm=llm,  # type: ignore[arg-type]
        publisher=published,
        memories_topic="memories",
    )
    session_id = window_node_id(USER, Level.SESSION, T0, "s1")
    leaf = MemoryNode(
        id=segment_id(USER, ["e1"]),
        user_id=USER,
        level=Level.SEGMENT,
        t_start=T0,
        t_end=T0 + timedelta(minutes=1),
        text="On 3 March 2025, Ana said she adopted a dog.",
        parent_id=session_id,
        source_ids=("e1",),
    )
    await tree.save_node(leaf, fingerprint="")
    window = Window(USER, Level.SESSION, T0, T0 + timedelta(minutes=1), "s1")
    closure = WindowClosed(window, "session_end", session_id, None)

    [first] = await consolidator.handle_batch([closure])
    assert first.node is not None and first.node.degraded
    assert await tree.degraded() == [(USER, session_id)]

    llm.up = True
    ticker = ClockTicker(
        tree=tree,
        publisher=published,
        turns_topic="turns",
        windows_topic="windows",
        retry_degraded=True,
    )
    assert await ticker.reconsolidate_degraded() == 1
    retry = decode_window(published.sent[-1].value)
    assert (retry.node_id, retry.window.level) == (session_id, Level.SESSION)

    [second] = await consolidator.handle_batch([retry])
    assert second.node is not None
    assert (second.node.degraded, second.node.version) == (False, 2)
    assert second.node.text == "a summary written by the model"
    assert await tree.degraded() == []
    assert await ticker.reconsolidate_degraded() == 0
    memories = [o.value for o in published.sent if o.value["type"] == "memory.v1"]
    assert [(m["id"], m["version"]) for m in memories] == [(session_id, 1), (session_id, 2)]
    assert await tree.outbox(USER, "consolidator") == []
    await index.close()
