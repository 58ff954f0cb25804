"""The change feed replays the stores (real broker, Faust workers, Redis and Qdrant).

A `MemoryFeed` reads the memories topic from the start while two users' conversations are
ingested, messages of the first are forgotten, the second user is forgotten whole, and
the first is rebuilt with a new prompt version. Applying the events it gave, in order, must
give exactly the live memories of the stores (the same ids, versions and texts) and the
facts route's current facts. The first user's sister moves from Porto to Lisbon, then to
Oslo; forgetting the Oslo message re-opens Lisbon. The user plays for the Magpies, then
leaves them without saying the attribute ("I've left the Magpies"): the feed reports the
team closed, and forgetting the ending re-opens it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from memstream.bootstrap import Container
from memstream.client.feed import MemoryFeed
from memstream.client.feed_events import (
    FactRemoved,
    FactReopened,
    FactSuperseded,
    FactWritten,
    FeedEvent,
    MemoryRemoved,
    MemoryWritten,
    RebuildFinished,
    UserForgotten,
    WindowConsolidated,
)
from memstream.client.recall_async import AsyncRecallClient
from memstream.domain.models import Level
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.runner import WRITE_PATH, Part, run_parts

from .test_forget_message import FORGOTTEN, START, USER, conversation, runtime, wait_done
from .test_rebuild import rebuilt

__all__ = ["runtime"]

OTHER = "feed-other"
Replayed = dict[str, tuple[str, int, str]]  # memory id -> user, version, text
# Later days of the first user: the sister's home moves twice, the second move forgotten;
# a team joined, then left without naming the attribute, the ending forgotten.
MOVES = [
    ("My sister moved to Lisbon.", "How exciting!"),
    ("My sister moved to Oslo.", "What a change!"),
    ("I play for the Magpies now.", "Good luck this season!"),
    ("I've left the Magpies.", "Sorry to hear that."),
]
OSLO, LEFT_MAGPIES = "d3-q0", "d5-q0"


def moves() -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for n, (said, reply) in enumerate(MOVES):
        day, at = n + 2, START + timedelta(days=n + 2)
        session = f"s{day}"
        for j, (role, speaker, text) in enumerate(
            (("user", "Ana", said), ("assistant", "Bot", reply))
        ):
            events.append(
                {
                    "type": "turn.v1",
                    "event_id": f"d{day}-{'qa'[j]}0",
                    "user_id": USER,
                    "session_id": session,
                    "seq": j,
                    "speaker": speaker,
                    "role": role,
                    "text": text,
                    "ts": (at + timedelta(minutes=j)).isoformat(),
                }
            )
        end = {"type": "session_end.v1", "user_id": USER, "session_id": session}
        events.append({**end, "ts": (at + timedelta(minutes=10)).isoformat()})
    return events


def replay_facts(events: Sequence[FeedEvent]) -> dict[str, tuple[str, str, str, str]]:
    """The fact versions that hold, by id (user, subject, attribute, value), from the
    events applied in order."""
    versions: dict[str, FactWritten] = {}
    for event in events:
        if isinstance(event, FactWritten):
            versions[event.fact_id] = event
        elif isinstance(event, FactRemoved):
            for fact_id in event.fact_ids:
                versions.pop(fact_id, None)
        elif isinstance(event, UserForgotten):
            versions = {i: v for i, v in versions.items() if v.user_id != event.user_id}
    return {i: (v.user_id, v.subject, v.attribute, v.value) for i, v in versions.items() if v.holds}


def current_facts(user: str, answer: dict[str, Any]) -> dict[str, tuple[str, str, str, str]]:
    return {f["fact_id"]: (user, f["subject"], f["attribute"], f["value"]) for f in answer["facts"]}


def replay(events: Sequence[FeedEvent]) -> Replayed:
    """The live memories the events describe, applied in the order they came."""
    live: Replayed = {}
    for event in events:
        if isinstance(event, MemoryWritten):
            live[event.id] = (event.user_id, event.version, event.text)
        elif isinstance(event, MemoryRemoved):
            for memory_id in event.ids:
                live.pop(memory_id, None)
        elif isinstance(event, UserForgotten):
            live = {i: m for i, m in live.items() if m[0] != event.user_id}
    return live


async def stored(rt: Container, users: Sequence[str]) -> Replayed:
    live: Replayed = {}
    for user in users:
        for level in Level:
            ids = await rt.tree.level_ids(user, level, limit=10_000)
            for node in await rt.tree.get_many(user, ids):
                live[node.id] = (user, node.version, node.text)
    return live


async def read_to_end(feed: MemoryFeed, events: list[FeedEvent], timeout_s: float = 60) -> None:
    """Wait until the feed has given every event the topic holds now."""
    consumer = feed.consumer
    tps = await _partitions(feed)
    ends = {tp.partition: o for tp, o in (await consumer.end_offsets(tps)).items() if o > 0}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while any(feed.positions().get(p, 0) < end for p, end in ends.items()):
        if loop.time() > deadline:
            raise TimeoutError(f"the feed read {feed.positions()} of {ends}")
        await asyncio.sleep(0.1)


async def _partitions(feed: MemoryFeed) -> list[object]:
    from aiokafka import TopicPartition

    parts = feed.consumer.partitions_for_topic(feed.topic) or set()
    return [TopicPartition(feed.topic, p) for p in sorted(parts)]


async def test_replaying_the_feed_gives_the_stores_final_state(
    runtime: Container, tmp_path: Path
) -> None:
    settings = runtime.settings
    other = [{**e, "user_id": OTHER} for e in conversation() if e.get("session_id") == "s0"]
    path = tmp_path / "conversation.jsonl"
    turns = conversation() + moves() + other
    path.write_text("".join(json.dumps(e) + "\n" for e in turns))
    events: list[FeedEvent] = []

    async def consume(feed: MemoryFeed) -> None:
        async for event in feed:
            events.append(event)

    base = f"http://127.0.0.1:{settings.api.port}"
    opener = AsyncRecallClient(base)  # the memories' words come sealed: the API opens them
    feed = MemoryFeed(
        settings.broker.bootstrap,
        group_id=settings.broker.consumer_group + "-feed",
        catalog=runtime.catalog,
        opener=opener,
    )
    async with opener, feed, httpx.AsyncClient(base_url=base, timeout=30) as client:
        reading = asyncio.create_task(consume(feed))
        started = asyncio.Event()
        async with run_parts(
            runtime, WRITE_PATH | {Part.API}, fast_rebalance=True, on_started=started.set
        ):
            await asyncio.wait_for(started.wait(), 60)
            await publish_file(
                path,
                catalog=runtime.catalog,
                bootstrap=settings.broker.bootstrap,
                show_progress=False,
            )
            await wait_caught_up(runtime, [USER, OTHER], timeout_s=120)
            # Both messages of an exchange: its leaf is removed, its ancestors written again.
            # And the move to Oslo: Lisbon holds again; and leaving the Magpies: they do.
            forgotten = {"message_ids": [FORGOTTEN, "d0-a0", OSLO, LEFT_MAGPIES]}
            reply = await client.post(f"/v1/users/{USER}/messages:forget", json=forgotten)
            assert reply.status_code == 202, reply.text
            for handle in reply.json()["handles"]:
                await wait_done(client, handle)
            reply = await client.delete(f"/v1/users/{OTHER}")
            assert reply.status_code == 200, reply.text
            await wait_caught_up(runtime, [USER], timeout_s=120)

        # The workers again with a new prompt version: the rebuild writes every node again.
        upgraded = settings.model_copy(update={"prompt_version": "feed-2"})
        started = asyncio.Event()
        async with run_parts(
            replace(runtime, settings=upgraded),
            WRITE_PATH | {Part.API},
            fast_rebalance=True,
            on_started=started.set,
        ):
            await asyncio.wait_for(started.wait(), 60)
            await rebuilt(client)
            await wait_caught_up(runtime, [USER], timeout_s=120)
            facts = {
                user: (await client.get(f"/v1/users/{user}/facts")).json() for user in (USER, OTHER)
            }

        await read_to_end(feed, events)
        reading.cancel()

    final = await stored(runtime, [USER, OTHER])
    assert {m[0] for m in final.values()} == {USER}  # the other user is gone from the stores
    assert replay(events) == final
    # The current facts replayed from the feed are the facts route's answer.
    answered = current_facts(USER, facts[USER]) | current_facts(OTHER, facts[OTHER])
    assert replay_facts(events) == answered
    sister = {v[3] for v in answered.values() if v[2] == "lives_in" and "sister" in v[1]}
    assert sister == {"Lisbon"}
    assert {v[3] for v in answered.values() if v[2] == "team"} == {"the Magpies"}

    # Every kind of change was announced, and each only as often as the feed repeats it.
    kinds = {type(e) for e in events}
    assert kinds == {
        MemoryWritten,
        MemoryRemoved,
        UserForgotten,
        WindowConsolidated,
        RebuildFinished,
        FactWritten,
        FactRemoved,
        FactSuperseded,
        FactReopened,
    }
    assert [e.user_id for e in events if isinstance(e, UserForgotten)] == [OTHER]
    closed = {(e.value, e.superseded_by) for e in events if isinstance(e, FactSuperseded)}
    assert {value for value, _ in closed} >= {"Porto", "Lisbon", "the Magpies"}
    reopened = {(e.value, e.was_superseded_by) for e in events if isinstance(e, FactReopened)}
    assert {value for value, _ in reopened} == {"Lisbon", "the Magpies"}
    assert reopened <= closed  # each re-opened by forgetting what had closed it
    # The ending closed the team by a negation of it, which no longer exists.
    [(_, ending)] = [c for c in closed if c[0] == "the Magpies"]
    ended = [e for e in events if isinstance(e, FactWritten) and e.fact_id == ending]
    assert ended and ended[0].negated and ended[0].attribute == "team"
    assert any(isinstance(e, FactRemoved) and ending in e.fact_ids for e in events)
    [finished] = [e for e in events if isinstance(e, RebuildFinished)]
    assert finished.leaves == finished.leaves_rewritten > 0
    versions = [e.version for e in events if isinstance(e, MemoryWritten) and e.user_id == USER]
    assert max(versions) >= 3  # forgotten (v2) then rebuilt (v3): versions in the feed
    # Per user in order: a memory's versions come in increasing order.
    seen: dict[str, int] = {}
    for e in events:
        if isinstance(e, MemoryWritten):
            assert e.version > seen.get(e.id, 0), e.dedup_key
            seen[e.id] = e.version
