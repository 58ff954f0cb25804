"""Rebuilding a user's tree through the real broker, Faust workers, Redis and Qdrant (edge).

A small conversation (two sessions on two days) is built through the pipeline; the workers
then run with a new prompt version, and the user is rebuilt through the HTTP API in chunks of
two leaves (the scheduler sends the continuations). Every node is written again once
(version + 1, the new derivation in Redis and in Qdrant's payloads), ids and tree shape stay;
the same rebuild again (through `memstream rebuild --all`) changes nothing.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from memstream.adapters.qdrant.query import node_from_payload
from memstream.bootstrap import Container, derivation
from memstream.domain.models import MemoryNode
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.rebuild_command import _run as run_command
from memstream.entrypoints.runner import WRITE_PATH, Part, run_parts
from memstream.settings import Settings

from .redis_cluster import LAYOUTS, on_layout
from .test_forget_message import USER, all_nodes, conversation, qdrant_points, runtime

__all__ = ["runtime"]  # the fixture, shared with the message-forget test


@pytest.fixture(params=LAYOUTS)
def settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    """Each test on a single primary and on a Redis Cluster."""
    return on_layout(settings, request)


async def rebuilt(client: httpx.AsyncClient, timeout_s: float = 120) -> dict[str, Any]:
    """POST a rebuild of USER, poll its handle until done; the last progress."""
    reply = await client.post(f"/v1/users/{USER}/rebuild")
    assert reply.status_code == 202, reply.text
    handle = reply.json()["handle"]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        progress = await client.get(handle)
        assert progress.status_code == 200, progress.text
        if progress.json()["status"] == "done":
            return dict(progress.json())
        await asyncio.sleep(0.2)
    raise TimeoutError(f"the rebuild did not finish: {progress.json()}")


def shape(nodes: dict[str, MemoryNode]) -> dict[str, tuple[Any, ...]]:
    return {i: (n.level, n.parent_id, n.children, n.source_ids) for i, n in nodes.items()}


async def test_a_new_prompt_version_rewrites_every_node_once_and_again_changes_nothing(
    runtime: Container, tmp_path: Path
) -> None:
    path = tmp_path / "conversation.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in conversation()))
    settings = runtime.settings
    started = asyncio.Event()
    async with run_parts(runtime, WRITE_PATH, fast_rebalance=True, on_started=started.set):
        await asyncio.wait_for(started.wait(), 60)
        await publish_file(
            path, catalog=runtime.catalog, bootstrap=settings.broker.bootstrap, show_progress=False
        )
        await wait_caught_up(runtime, [USER], timeout_s=120)
    before = {n.id: n for n in await all_nodes(runtime)}
    assert len({n.level for n in before.values()}) == 5
    assert {n.derivation for n in before.values()} == {derivation(settings)}

    # The same stores, the workers now with other prompts (a new version of them).
    upgraded = settings.model_copy(update={"prompt_version": "test-2", "rebuild_chunk_leaves": 2})
    new = derivation(upgraded)
    assert new != derivation(settings)
    started = asyncio.Event()
    base = f"http://127.0.0.1:{settings.api.port}"
    async with (
        run_parts(
            replace(runtime, settings=upgraded),
            WRITE_PATH | {Part.API},
            fast_rebalance=True,
            on_started=started.set,
        ),
        httpx.AsyncClient(base_url=base, timeout=30) as client,
    ):
        await asyncio.wait_for(started.wait(), 60)
        progress = await rebuilt(client)
        leaves = sum(1 for n in before.values() if n.level == 1)
        assert (progress["leaves"], progress["leaves_rewritten"]) == (leaves, leaves)
        assert progress["windows"] == len(before) - leaves
        await wait_caught_up(runtime, [USER], timeout_s=120)
        after = {n.id: n for n in await all_nodes(runtime)}
        assert shape(after) == shape(before)
        assert {i: n.version for i, n in after.items()} == {
            i: n.version + 1 for i, n in before.items()
        }
        assert {n.derivation for n in after.values()} == {new}
        payloads = await qdrant_points(runtime, list(after))
        assert {node_from_payload(i, dict(p.payload)).derivation for i, p in payloads.items()} == {
            new
        }
        detail = await client.get(f"/v1/memories/{next(iter(after))}", params={"user_id": USER})
        assert detail.json()["memory"]["derivation"] == new.to_json()

        # Again, as an operator would: `memstream rebuild --all` (users listed from Redis).
        await asyncio.wait_for(run_command(upgraded, [], True, None, None, True), 120)
        job = await runtime.tree.rebuild_job(USER)
        assert job is not None and job.finished and job.rewritten == 0
        await wait_caught_up(runtime, [USER], timeout_s=120)
        assert {n.id: n for n in await all_nodes(runtime)} == after
