"""Losing a store for real and repairing it: the index directory deleted, Redis flushed.

A small conversation (two sessions on two days) is built through the real broker, Faust
workers, Redis and Qdrant's in-process engine. Then one store is lost as an operator would
lose it, and the test checks that the loss is noticed (the divergence check and readiness)
and that a repair (through the API, and `memstream repair --all`) brings back exactly the
same nodes and the same recall answers, and that a second repair writes nothing.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from memstream.bootstrap import Container, build_recall, build_repair, qdrant_edge_dir
from memstream.domain.models import MemoryNode
from memstream.entrypoints.cli_audit import os_user
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.repair_command import run_repair
from memstream.entrypoints.runner import WRITE_PATH, Part, run_parts
from memstream.recall.pipeline import RecallRequest
from memstream.repair.divergence import DivergenceWatch, check_stores
from memstream.settings import Settings

from .redis_cluster import LAYOUTS, on_layout
from .test_forget_message import USER, all_nodes, api_runtime, conversation
from .test_tenants_stack import _audit_records

QUESTIONS = (
    "Where did my sister move?",
    "What class do I start next week?",
    "How far did I run?",
)


@pytest.fixture(params=LAYOUTS)
def settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    """Each test on a single primary and on a Redis Cluster."""
    return on_layout(settings, request)


async def built(rt: Container, tmp_path: Path) -> None:
    path = tmp_path / "conversation.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in conversation()))
    started = asyncio.Event()
    async with run_parts(rt, WRITE_PATH, fast_rebalance=True, on_started=started.set):
        await asyncio.wait_for(started.wait(), 60)
        await publish_file(
            path, catalog=rt.catalog, bootstrap=rt.settings.broker.bootstrap, show_progress=False
        )
        await wait_caught_up(rt, [USER], timeout_s=120)


Answers = list[list[tuple[str, str, float]]]


async def answers(rt: Container) -> Answers:
    pipeline = build_recall(rt).pipeline
    replies = []
    for question in QUESTIONS:
        result = await pipeline.recall(RecallRequest(USER, question))
        replies.append([(m.node.id, m.node.text, round(m.score, 5)) for m in result.memories])
    return replies


def assert_same_answers(after: Answers, before: Answers) -> None:
    """The same memories in the same order, with scores equal up to the embedder's batching:
    the int8 model quantizes its activations per batch, so a leaf embedded again by the
    repair, beside other leaves than online, gets a vector that differs in its last digits."""
    assert [[(i, t) for i, t, _ in a] for a in after] == [[(i, t) for i, t, _ in a] for a in before]
    scores = [s for a in after for _, _, s in a]
    assert scores == pytest.approx([s for a in before for _, _, s in a], abs=0.02)


async def snapshot(rt: Container) -> tuple[dict[str, MemoryNode], Any]:
    return {n.id: n for n in await all_nodes(rt)}, await answers(rt)


async def knowledge(rt: Container) -> dict[str, dict[bytes, bytes]]:
    """The L1s' facts and entity surfaces as Redis keeps them."""
    client = rt.tree._r  # type: ignore[attr-defined]
    prefix = f"{rt.settings.redis.namespace}:{{{USER}}}:"
    return {name: await client.hgetall(prefix + name) for name in ("facts", "entities")}


async def until_repaired(client: httpx.AsyncClient, timeout_s: float = 120) -> dict[str, Any]:
    """POST a repair of USER, poll its handle until done; the last state."""
    reply = await client.post(f"/v1/users/{USER}/repair")
    assert reply.status_code == 202, reply.text
    handle = reply.json()["handle"]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        state = await client.get(handle)
        assert state.status_code == 200, state.text
        if state.json()["status"] == "done":
            return dict(state.json())
        await asyncio.sleep(0.2)
    raise TimeoutError(f"the repair did not finish: {state.json()}")


async def test_a_deleted_index_directory_is_noticed_and_repaired_through_the_api(
    settings: Settings, tmp_path: Path
) -> None:
    async with api_runtime(settings, tmp_path) as rt:
        await built(rt, tmp_path)
        before_nodes, before_answers = await snapshot(rt)
        assert len({n.level for n in before_nodes.values()}) == 5
        assert all(before_answers)
        collection = qdrant_edge_dir(rt.settings) / rt.settings.qdrant.collection
    shutil.rmtree(collection)  # the index's directory, with the process that owned it stopped

    async with api_runtime(settings, tmp_path) as rt:
        lost = await check_stores(rt.tree, rt.index, sample_users=5)
        assert lost.index_empty and not lost.stores_agree
        assert lost.users_differing == (USER,)
        assert not any(await answers(rt))  # what recall answered: 200, no memories

        started = asyncio.Event()
        base = f"http://127.0.0.1:{rt.settings.api.port}"
        async with (
            run_parts(rt, {Part.API}, on_started=started.set),
            httpx.AsyncClient(base_url=base, timeout=30) as client,
        ):
            await asyncio.wait_for(started.wait(), 60)
            ready = await client.get("/readyz")
            assert ready.status_code == 503
            assert ready.json()["checks"] == {"redis": True, "qdrant": True, "stores_agree": False}
            assert (await client.get(f"/v1/users/{USER}/repair")).json()["status"] == "needed"

            state = await until_repaired(client)
            assert (
                state["tree"]
                == state["index"]
                == {
                    f"L{lv}": sum(1 for n in before_nodes.values() if n.level == lv)
                    for lv in range(1, 6)
                }
            )
            # Nobody to repair or rebuild: an answer at once, not a job that never starts.
            for action in ("repair", "rebuild"):
                reply = await client.post(f"/v1/users/nobody/{action}")
                assert reply.status_code == 404, reply.text
                assert "nothing to" in reply.json()["detail"]

        after_nodes, after_answers = await snapshot(rt)
        assert after_nodes == before_nodes
        assert_same_answers(after_answers, before_answers)
        found = await check_stores(rt.tree, rt.index, sample_users=5)
        assert found.stores_agree and not found.users_differing
        assert await build_recall(rt).checks["stores_agree"]() is True

        again = await build_repair(rt).repair(USER)
        assert (again.indexed, again.restored) == (0, 0)


async def test_a_flushed_redis_is_noticed_and_its_tree_repaired_from_the_index_by_the_cli(
    settings: Settings, tmp_path: Path
) -> None:
    # The index gives the tree back only while the users' data keys exist: a Redis flushed
    # with them takes the sealed payloads' words along (docs/forget-everywhere.md). This
    # deployment keeps its payloads in the clear.
    settings = settings.model_copy(update={"seal_index": False})
    async with api_runtime(settings, tmp_path) as rt:
        await built(rt, tmp_path)
        before_nodes, before_answers = await snapshot(rt)
        before_knowledge = await knowledge(rt)
        assert all(before_knowledge.values())
        await rt.tree._r.flushall()  # type: ignore[attr-defined]  # this test run's own Redis

        lost = await check_stores(rt.tree, rt.index, sample_users=5)
        assert lost.tree_empty and not lost.stores_agree
        # Readiness: an empty tree beside the index counts from the second check in a row.
        watch = DivergenceWatch(partial(check_stores, rt.tree, rt.index, 1), every_s=0.0)
        assert [await watch.stores_agree(), await watch.stores_agree()] == [True, False]
        assert not any(await answers(rt))
        local = rt.settings

    # `memstream repair --all`, with the index's directory free (the in-process engine).
    reports = await run_repair(local, [], True, show=False, actor="ops-ann")
    assert [(r.user_id, r.indexed, r.restored) for r in reports] == [(USER, 0, len(before_nodes))]

    async with api_runtime(settings, tmp_path) as rt:
        after_nodes, after_answers = await snapshot(rt)
        assert after_nodes == before_nodes
        assert await knowledge(rt) == before_knowledge
        assert_same_answers(after_answers, before_answers)
        assert (await check_stores(rt.tree, rt.index, sample_users=5)).stores_agree
    again = await run_repair(local, [USER], False, show=False)
    assert [(r.indexed, r.restored) for r in again] == [(0, 0)]

    # Both runs are on the audit trail: `--all` as one record, by the actor given or the OS user.
    audit = [json.loads(value) for _, value in await _audit_records(local, expected=2)]
    assert [(r["action"], r["user_id"], r["users"], r["outcome"], r["origin"]) for r in audit] == [
        ("users.repair", None, 1, "done", "cli"),
        ("user.repair", USER, None, "done", "cli"),
    ]
    assert [r["actor"] for r in audit] == ["ops-ann", os_user()]
