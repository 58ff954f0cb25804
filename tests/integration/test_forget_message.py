"""Forgetting one message through the real broker, Faust workers, Redis and Qdrant (edge).

A small conversation (two sessions on two days, two exchanges each) is built through the
pipeline; one message is forgotten through the HTTP API. Afterwards its distinctive phrase
is in no Redis value and no Qdrant payload, no sparse vector holds its terms, the L1 that
held it and exactly its ancestors are at version + 1, and replaying the turns topic from the
start (a new consumer group) does not bring it back.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from memstream.adapters.qdrant.edge import EdgeIndex
from memstream.bootstrap import Container, connect
from memstream.domain.ids import segment_id
from memstream.domain.lexical import document_weights
from memstream.domain.models import Level, MemoryNode
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.runner import WRITE_PATH, Part, run_parts
from memstream.settings import Settings

USER = "forget-one"
PHRASE = "Pistachio sleeps inside the blue teapot"
FORGOTTEN = "kitten-0"
START = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)


def conversation() -> list[dict[str, Any]]:
    texts = [
        [
            (f"My kitten {PHRASE} every afternoon.", "What a cosy place for a nap."),
            ("I start a pottery class next week.", "Pottery is a calm hobby."),
        ],
        [
            ("My sister moved to Porto for work.", "Porto has lovely tiles."),
            ("I ran ten kilometres this morning.", "That is a good pace."),
        ],
    ]
    events: list[dict[str, Any]] = []
    for day, exchanges in enumerate(texts):
        session = f"s{day}"
        at = START + timedelta(days=day)
        for i, (question, answer) in enumerate(exchanges):
            for j, (role, text) in enumerate((("user", question), ("assistant", answer))):
                events.append(
                    {
                        "type": "turn.v1",
                        "event_id": f"d{day}-{'qa'[j]}{i}",
                        "user_id": USER,
                        "session_id": session,
                        "seq": 2 * i + j,
                        "speaker": "Ana" if role == "user" else "Bot",
                        "role": role,
                        "text": text,
                        "ts": (at + timedelta(minutes=2 * i + j)).isoformat(),
                    }
                )
        end = at + timedelta(minutes=10)
        events.append(
            {
                "type": "session_end.v1",
                "user_id": USER,
                "session_id": session,
                "ts": end.isoformat(),
            }
        )
    # In the first session, so the day it is forgotten from is the second, not the first.
    for e in events:
        if e.get("event_id") == "d0-q0":
            e["event_id"] = FORGOTTEN
    return events


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@asynccontextmanager
async def api_runtime(settings: Settings, tmp_path: Path) -> AsyncIterator[Container]:
    """A runtime whose clock closes windows at once and whose API answers without a key."""
    local = settings.model_copy(
        update={
            "data_dir": tmp_path,
            "clock_grace_s": 0.0,
            "clock_interval_s": 0.5,
            "recall_auth_disabled": True,
            "api_port": free_port(),
        }
    )
    async with connect(local, prioritise_online=True) as rt:
        yield rt


@pytest.fixture
async def runtime(settings: Settings, tmp_path: Path) -> AsyncIterator[Container]:
    async with api_runtime(settings, tmp_path) as rt:
        yield rt


def leaf_and_ancestors(nodes: dict[str, MemoryNode], leaf: str) -> list[str]:
    """The leaf's id and the ids above it, bottom-up, as `nodes` link them."""
    chain = [leaf]
    while (parent := nodes[chain[-1]].parent_id) is not None:
        chain.append(parent)
    return chain


async def all_nodes(rt: Container) -> list[MemoryNode]:
    nodes: list[MemoryNode] = []
    for level in Level:
        nodes += await rt.tree.get_many(USER, await rt.tree.level_ids(USER, level, limit=10_000))
    return nodes


async def redis_values(rt: Container) -> str:
    """Every value of every key in this test's Redis namespace, as text."""
    client = rt.tree._r  # type: ignore[attr-defined]
    found: list[str] = []
    async for key in client.scan_iter(match=f"{rt.settings.redis.namespace}:*"):
        kind = (await client.type(key)).decode()
        if kind == "string":
            found.append((await client.get(key)).decode())
        elif kind == "list":
            found += [v.decode() for v in await client.lrange(key, 0, -1)]
        elif kind == "set":
            found += [v.decode() for v in await client.smembers(key)]
        elif kind == "zset":
            found += [v.decode() for v in await client.zrange(key, 0, -1)]
        elif kind == "hash":
            found += [f"{k.decode()}={v.decode()}" for k, v in (await client.hgetall(key)).items()]
        else:
            raise AssertionError(f"unexpected key type {kind} at {key!r}")
    return "\n".join(found)


async def qdrant_points(rt: Container, ids: list[str]) -> dict[str, Any]:
    """Payloads and vectors of the given point ids that exist."""
    assert isinstance(rt.index, EdgeIndex), "the embedded stack indexes with qdrant-edge"
    records = rt.index._shard.retrieve(ids, with_payload=True, with_vector=True)
    return {str(r.id): r for r in records}


def mentions(points: dict[str, Any]) -> list[str]:
    """Ids of points whose payload holds the phrase or whose sparse vector holds its terms."""
    terms = set(document_weights(PHRASE)) - set(document_weights("the blue"))
    hits = []
    for point_id, record in points.items():
        payload = json.dumps(dict(record.payload or {}), ensure_ascii=False)
        lexical = record.vector.get("lexical") if isinstance(record.vector, dict) else None
        indices = set(getattr(lexical, "indices", ()) or ())
        if PHRASE in payload or "teapot" in payload or terms & indices:
            hits.append(point_id)
    return hits


async def wait_done(client: httpx.AsyncClient, handle: str, timeout_s: float = 60) -> float:
    loop = asyncio.get_running_loop()
    started = loop.time()
    while loop.time() - started < timeout_s:
        reply = await client.get(handle)
        assert reply.status_code == 200, reply.text
        if reply.json()["status"] == "done":
            return loop.time() - started
        await asyncio.sleep(0.2)
    raise TimeoutError("the forget did not finish")


async def test_forgetting_one_message_removes_it_everywhere_and_a_replay_keeps_it_gone(
    runtime: Container, tmp_path: Path
) -> None:
    path = tmp_path / "conversation.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in conversation()))
    started = asyncio.Event()
    settings = runtime.settings
    base = f"http://127.0.0.1:{settings.api.port}"
    async with (
        run_parts(runtime, WRITE_PATH | {Part.API}, fast_rebalance=True, on_started=started.set),
        httpx.AsyncClient(base_url=base, timeout=30) as client,
    ):
        await asyncio.wait_for(started.wait(), 60)
        await publish_file(
            path, catalog=runtime.catalog, bootstrap=settings.broker.bootstrap, show_progress=False
        )
        await wait_caught_up(runtime, [USER], timeout_s=120)
        before = {n.id: n for n in await all_nodes(runtime)}
        assert {n.level for n in before.values()} == set(Level)
        all_ids = list(before)
        assert PHRASE in await redis_values(runtime)
        assert mentions(await qdrant_points(runtime, all_ids))  # the check can see it

        reply = await client.delete(f"/v1/users/{USER}/messages/{FORGOTTEN}")
        assert reply.status_code == 202, reply.text
        [handle] = reply.json()["handles"]
        took = await wait_done(client, handle)
        print(f"one message forgotten in {took:.2f} s")
        await wait_caught_up(runtime, [USER], timeout_s=120)
        after = {n.id: n for n in await all_nodes(runtime)}

        leaf = segment_id(USER, [FORGOTTEN, "d0-a0"])
        chain = leaf_and_ancestors(before, leaf)
        assert [before[i].level for i in chain] == list(Level)
        assert after.keys() == before.keys()
        changed = {i for i in after if after[i].version != before[i].version}
        assert changed == set(chain)
        assert all(after[i].version == before[i].version + 1 for i in chain)
        assert after[leaf].source_ids == ("d0-a0",)
        assert all(FORGOTTEN not in n.source_ids for n in after.values())
        assert all(FORGOTTEN not in f.source_ids for n in after.values() for f in n.facts)
        assert PHRASE not in await redis_values(runtime)
        assert "teapot" not in await redis_values(runtime)
        points = await qdrant_points(runtime, all_ids)
        assert set(points) == set(all_ids)
        assert mentions(points) == []
        # The leaf's dense vector is now its remaining message's alone.
        [remaining] = await runtime.embedder.embed([after[leaf].messages[0].text])
        dense = points[leaf].vector["dense"]
        assert sum(a * b for a, b in zip(dense, remaining, strict=True)) == pytest.approx(
            1, abs=1e-3
        )

        # The batch form, for every message of the second session: its leaves, session and
        # day go (from Redis and Qdrant); the week and month are written again.
        second = [f"d1-{k}" for k in ("q0", "a0", "q1", "a1")]
        reply = await client.post(f"/v1/users/{USER}/messages:forget", json={"message_ids": second})
        assert reply.status_code == 202, reply.text
        for handle in reply.json()["handles"]:
            await wait_done(client, handle)
        await wait_caught_up(runtime, [USER], timeout_s=120)
        emptied = {n.id: n for n in await all_nodes(runtime)}
        gone = {i for i, n in after.items() if set(n.source_ids) <= set(second)}
        assert sorted(after[i].level for i in gone) == [1, 1, 2, 3]
        assert emptied.keys() == after.keys() - gone
        assert set(await qdrant_points(runtime, all_ids)) == set(all_ids) - gone
        rewritten = {i for i in emptied if emptied[i].version != after[i].version}
        assert rewritten == set(chain[3:])  # the week and the month
        assert "Porto" not in await redis_values(runtime)

    # Replay the turns topic from the start in a new consumer group: nothing comes back.
    # (The same container, its clients shared: the edge shard opens once per process.)
    replay = settings.model_copy(
        update={"consumer_group": settings.broker.consumer_group + "-replay"}
    )
    async with run_parts(
        replace(runtime, settings=replay), WRITE_PATH, fast_rebalance=True
    ) as running:
        assert running.segmenter is not None
        records = len(conversation()) + 2  # and the two forgets
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 120
        while running.segmenter.handled < records:  # the replay did read the topic again
            assert loop.time() < deadline, "the replay did not read the turns topic"
            await asyncio.sleep(0.2)
        await wait_caught_up(running.container, [USER], timeout_s=120)
        replayed = {n.id: n.version for n in await all_nodes(running.container)}
        assert replayed == {i: n.version for i, n in emptied.items()}
        assert PHRASE not in await redis_values(running.container)
        assert "Porto" not in await redis_values(running.container)
        assert mentions(await qdrant_points(running.container, all_ids)) == []
