"""Forgetting one message of a LoCoMo conversation built through the real pipeline.

The first six sessions of conversation 30 (119 messages over eight weeks; the whole of it
takes three times as long for no more coverage) go through the broker, the Faust workers,
Redis and Qdrant; then the API forgets D5:15, Gina's message about her tattoo ("it stands
for freedom"), the only evidence of "When did Gina get her tattoo?". In LoCoMo every message
is its own L1 (a conversation between people), so that L1 goes, and exactly its ancestors
(session, day, week, month) are at version + 1; every other node is unchanged. Afterwards
the phrase is in no Redis value (nodes, state, outboxes, markers), no Qdrant payload, no
sparse vector differs from its node's current text (so the lexical index's IDF statistics
count no term of the old texts), no fact of a summary or fact version cites the message, no
entity holds its L1, and recall for the question no longer returns it. Replaying the turns
topic from the start does not bring it back.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from memstream.bootstrap import Container, build_recall
from memstream.domain.ids import segment_id
from memstream.domain.models import Level, MemoryNode
from memstream.domain.sparse import document_vector
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.runner import WRITE_PATH, Part, run_parts
from memstream.recall.pipeline import RecallRequest
from memstream.settings import Settings
from memstream_lab.locomo import (
    conversation_events,
    load_conversation,
    locomo_data_dir,
    message_text,
)

from .redis_cluster import LAYOUTS, on_layout
from .test_forget_message import (
    api_runtime,
    leaf_and_ancestors,
    qdrant_points,
    redis_values,
    wait_done,
)

CONVERSATION = "30"
USER = f"locomo-{CONVERSATION}"
MESSAGE = "D5:15"
PHRASE = "stands for freedom"
QUESTION = "When did Gina get her tattoo?"
SESSIONS = 6


@pytest.fixture(params=LAYOUTS)
def settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    """Each test on a single primary and on a Redis Cluster."""
    return on_layout(settings, request)


@pytest.fixture
async def runtime(settings: Settings, tmp_path: Path) -> AsyncIterator[Container]:
    async with api_runtime(settings, tmp_path) as rt:
        yield rt


def first_sessions(path: Path) -> int:
    """The first SESSIONS sessions of the conversation as a JSONL of events at `path`; the
    phrase is the message's alone in them. Returns how many events."""
    conv = load_conversation(locomo_data_dir() / f"{CONVERSATION}.json")
    conv = replace(conv, sessions=conv.sessions[:SESSIONS])
    texts = {m.dia_id: message_text(m) for s in conv.sessions for m in s.messages}
    assert [d for d, t in texts.items() if PHRASE in t] == [MESSAGE]
    events = conversation_events(conv, USER)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return len(events)


async def all_nodes(rt: Container) -> dict[str, MemoryNode]:
    nodes: list[MemoryNode] = []
    for level in Level:
        nodes += await rt.tree.get_many(USER, await rt.tree.level_ids(USER, level, limit=10_000))
    return {n.id: n for n in nodes}


def mentioning(points: dict[str, Any], nodes: dict[str, MemoryNode]) -> list[str]:
    """Ids of points whose payload holds the phrase, or whose sparse vector is not exactly
    that of their node's text now (terms of an older text would stay in the IDF counts)."""
    found = []
    for point_id, record in points.items():
        payload = str(dict(record.payload or {}))
        lexical = record.vector.get("lexical") if isinstance(record.vector, dict) else None
        indices = set(getattr(lexical, "indices", ()) or ())
        node = nodes.get(point_id)
        current = set(document_vector(node.text).indices) if node else set()
        if PHRASE in payload or indices != current:
            found.append(point_id)
    return found


async def recalled_sources(rt: Container) -> tuple[set[str], str]:
    """The message ids the recall for QUESTION cites (nodes and facts) and its texts."""
    result = await build_recall(rt).pipeline.recall(RecallRequest(USER, QUESTION))
    cited = {i for m in result.memories for i in m.node.source_ids}
    cited |= {i for m in result.memories for f in m.node.facts for i in f.source_ids}
    return cited, "\n".join(m.node.text for m in result.memories)


async def facts_cited(runtime: Container) -> set[str]:
    """The messages every fact version of the user cites, superseded ones included."""
    slots = {(f.subject, f.attribute) for f in await runtime.tree.facts(USER)}
    versions = [v for s in sorted(slots) for v in await runtime.tree.fact_history(USER, *s)]
    return {m for v in versions for m in v.source_ids}


async def test_forgetting_a_locomo_message_removes_it_from_every_store_and_recall(
    runtime: Container, tmp_path: Path
) -> None:
    path = tmp_path / "conversation.jsonl"
    published = first_sessions(path)
    settings = runtime.settings
    started = asyncio.Event()
    async with (
        run_parts(runtime, WRITE_PATH | {Part.API}, fast_rebalance=True, on_started=started.set),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{settings.api.port}", timeout=30) as api,
    ):
        await asyncio.wait_for(started.wait(), 60)
        await publish_file(
            path,
            catalog=runtime.catalog,
            bootstrap=settings.broker.bootstrap,
            show_progress=False,
        )
        await wait_caught_up(runtime, [USER], timeout_s=240)
        before = await all_nodes(runtime)
        leaf = segment_id(USER, [MESSAGE])
        assert before[leaf].source_ids == (MESSAGE,)
        chain = leaf_and_ancestors(before, leaf)[1:]  # the windows above the leaf
        assert [before[i].level for i in chain] == [2, 3, 4, 5]
        ids = list(before)
        assert PHRASE in await redis_values(runtime)  # the checks can see it
        assert leaf in mentioning(await qdrant_points(runtime, ids), before)
        cited, _ = await recalled_sources(runtime)
        assert MESSAGE in cited  # recall found the evidence before the forget
        assert leaf in (await runtime.tree.entity_index(USER)).leaves  # it named someone

        reply = await api.delete(f"/v1/users/{USER}/messages/{MESSAGE}")
        assert reply.status_code == 202, reply.text
        [handle] = reply.json()["handles"]
        await wait_done(api, handle, timeout_s=120)
        await wait_caught_up(runtime, [USER], timeout_s=120)
        after = await all_nodes(runtime)

        assert after.keys() == before.keys() - {leaf}
        changed = {i for i in after if after[i].version != before[i].version}
        assert changed == set(chain)
        assert all(after[i].version == before[i].version + 1 for i in chain)  # type: ignore[index]
        assert all(after[i] == before[i] for i in after.keys() - changed)
        assert all(MESSAGE not in n.source_ids for n in after.values())
        assert all(MESSAGE not in f.source_ids for n in after.values() for f in n.facts)
        assert PHRASE not in await redis_values(runtime)
        assert MESSAGE not in await facts_cited(runtime)
        index = await runtime.tree.entity_index(USER)
        assert leaf not in index.leaves
        assert all(leaf not in e.leaf_ids for e in index.entities.values())
        points = await qdrant_points(runtime, ids)
        assert set(points) == set(ids) - {leaf}
        assert mentioning(points, after) == []
        cited, texts = await recalled_sources(runtime)
        assert MESSAGE not in cited and PHRASE not in texts
        versions = {i: n.version for i, n in after.items()}

    # A new consumer group reads the turns topic from the start: the message stays gone.
    replay = settings.model_copy(
        update={"consumer_group": settings.broker.consumer_group + "-replay"}
    )
    async with run_parts(
        replace(runtime, settings=replay), WRITE_PATH, fast_rebalance=True
    ) as running:
        assert running.segmenter is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 120
        while running.segmenter.handled < published + 1:  # it read the topic (and the forget)
            assert loop.time() < deadline, "the replay did not read the turns topic"
            await asyncio.sleep(0.2)
        await wait_caught_up(running.container, [USER], timeout_s=120)
        replayed = await all_nodes(running.container)
        assert {i: n.version for i, n in replayed.items()} == versions
        assert PHRASE not in await redis_values(running.container)
        assert mentioning(await qdrant_points(running.container, ids), replayed) == []
