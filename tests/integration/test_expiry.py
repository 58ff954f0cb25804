"""Expiry through the real broker, Faust workers, Redis and Qdrant, on an injected clock.

The conversation of the message-forget test is built through the pipeline with one message
due an hour from "now" and an exchange already past its deadline. The clock (the segmenter's
and the scheduler's) is then moved past the deadline, no sleep: the scheduler ticks the
user, the segmenter forgets the message; afterwards it is in no Redis value and no Qdrant
payload or sparse vector, the fact it stated (Ana's kitten) is gone with it while the
others stay, the L1 that held it and exactly its ancestors are at version + 1, every other
node is unchanged. The exchange past its deadline on arrival was never stored.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memstream.bootstrap import Container, connect
from memstream.domain.ids import segment_id
from memstream.domain.models import Level
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.settings import Settings

from .redis_cluster import LAYOUTS, on_layout
from .test_forget_message import (
    FORGOTTEN,
    PHRASE,
    USER,
    all_nodes,
    conversation,
    leaf_and_ancestors,
    mentions,
    qdrant_points,
    redis_values,
)

GONE_ON_ARRIVAL = "Marmalade the tortoise"


@pytest.fixture(params=LAYOUTS)
def settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    """Each test on a single primary and on a Redis Cluster."""
    return on_layout(settings, request)


@dataclass
class MovableClock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def clock() -> MovableClock:
    return MovableClock(datetime.now(UTC).replace(microsecond=0))


@pytest.fixture
async def runtime(
    settings: Settings, tmp_path: Path, clock: MovableClock
) -> AsyncIterator[Container]:
    local = settings.model_copy(
        update={"data_dir": tmp_path, "clock_grace_s": 0.0, "clock_interval_s": 0.3}
    )
    async with connect(local, prioritise_online=True) as rt:
        yield replace(rt, clock=clock)


def events(deadline: datetime, past: datetime) -> list[dict[str, Any]]:
    found = conversation()
    for e in found:
        if e.get("event_id") == FORGOTTEN:
            e["expires_at"] = deadline.isoformat()
    first_end = next(i for i, e in enumerate(found) if e["type"] == "session_end.v1")
    template = found[first_end - 1]
    late = [
        template
        | {
            "event_id": f"late-{i}",
            "seq": 4 + i,
            "role": role,
            "speaker": "Ana" if role == "user" else "Bot",
            "text": f"{GONE_ON_ARRIVAL} {text}",
            "expires_at": past.isoformat(),
        }
        for i, (role, text) in enumerate((("user", "ate a leaf."), ("assistant", "How nice.")))
    ]
    return found[:first_end] + late + found[first_end:]


async def test_a_message_past_its_deadline_is_forgotten_everywhere(
    runtime: Container, clock: MovableClock, tmp_path: Path
) -> None:
    deadline = clock.now + timedelta(hours=1)
    path = tmp_path / "conversation.jsonl"
    lines = events(deadline, past=clock.now - timedelta(seconds=1))
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))
    settings = runtime.settings
    async with run_parts(runtime, WRITE_PATH, fast_rebalance=True):
        await publish_file(
            path, catalog=runtime.catalog, bootstrap=settings.broker.bootstrap, show_progress=False
        )
        await wait_caught_up(runtime, [USER], timeout_s=120)
        before = {n.id: n for n in await all_nodes(runtime)}
        assert {n.level for n in before.values()} == set(Level)
        # The exchange past its deadline made no L1: the four exchanges of the two sessions.
        assert sum(n.level == Level.SEGMENT for n in before.values()) == 4
        all_ids = list(before)
        stored = await redis_values(runtime)
        assert PHRASE in stored and GONE_ON_ARRIVAL not in stored
        assert await runtime.tree.expiries(USER) == [(FORGOTTEN, deadline.timestamp())]
        assert mentions(await qdrant_points(runtime, all_ids))  # the check can see it
        assert await pets_and_places(runtime) == {
            ("kitten named Pistachio", (FORGOTTEN,)),
            ("Porto", ("d1-q0",)),
        }

        clock.now = deadline + timedelta(seconds=1)  # the scheduler's next tick sees it due
        loop = asyncio.get_running_loop()
        limit = loop.time() + 60
        while not (await runtime.tree.forgotten_messages(USER, [FORGOTTEN]))[0]:
            assert loop.time() < limit, "the expired message was not forgotten"
            await asyncio.sleep(0.2)
        await wait_caught_up(runtime, [USER], timeout_s=120)
        after = {n.id: n for n in await all_nodes(runtime)}

    leaf = segment_id(USER, [FORGOTTEN, "d0-a0"])
    chain = leaf_and_ancestors(before, leaf)
    assert after.keys() == before.keys()
    changed = {i for i in after if after[i].version != before[i].version}
    assert changed == set(chain)
    assert all(after[i].version == before[i].version + 1 for i in chain)
    assert after[leaf].source_ids == ("d0-a0",)
    assert all(FORGOTTEN not in f.source_ids for n in after.values() for f in n.facts)
    stored = await redis_values(runtime)
    assert PHRASE not in stored and "teapot" not in stored
    assert GONE_ON_ARRIVAL not in stored
    assert mentions(await qdrant_points(runtime, all_ids)) == []
    assert await runtime.tree.expiries(USER) == []
    assert await pets_and_places(runtime) == {("Porto", ("d1-q0",))}  # the sister's move stays


async def pets_and_places(runtime: Container) -> set[tuple[str, tuple[str, ...]]]:
    """Every fact stored for the user, as said: its value and its messages."""
    said = await runtime.tree.facts_said(USER, datetime.now(UTC) + timedelta(days=1))
    return {(f.value, f.source_ids) for f in said}
