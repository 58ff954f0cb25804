"""Recall, explained, and the operator's routes over real HTTP, on a small conversation the
real write path ingested: the trace agrees with the memories returned, the users search
finds the user by prefix, and its overview counts what the tree holds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from memstream.client import AsyncRecallClient, MemstreamProducer, RecallClient
from memstream.client.models import Recall
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.settings import Settings

from .sdk_stack import API_KEY, Served, serving_everything

pytestmark = pytest.mark.integration

USER = "explain-ann"
SESSIONS = [
    [
        ("Ann", "user", "I adopted a cat last week, she is called Miso."),
        ("Bot", "assistant", "Congratulations on Miso! How is she settling in?"),
        ("Ann", "user", "She sleeps on my keyboard while I work on the bakery accounts."),
        ("Bot", "assistant", "A cat on the keyboard is a classic. How is the bakery?"),
    ],
    [
        ("Ann", "user", "The bakery opened a second shop in Leeds on Monday."),
        ("Bot", "assistant", "That is big news. Who runs the Leeds shop?"),
        ("Ann", "user", "My brother Tom runs it, he bakes sourdough every morning."),
        ("Bot", "assistant", "Tom must be up very early then."),
    ],
]
QUESTION = "Who runs the bakery shop in Leeds?"


@pytest.fixture
async def stack(settings: Settings, tmp_path: Path) -> AsyncIterator[Served]:
    async with serving_everything(settings, tmp_path) as served:
        with MemstreamProducer(
            served.settings.broker.bootstrap,
            topic_prefix=served.settings.broker.topic_prefix,
            idempotent=False,  # the embedded broker (Tansu) hands out no producer ids
        ) as producer:
            for day, turns in enumerate(SESSIONS, start=1):
                session = f"s{day}"
                for seq, (speaker, role, text) in enumerate(turns):
                    producer.publish_turn(
                        user_id=USER,
                        session_id=session,
                        seq=seq,
                        speaker=speaker,
                        role=role,
                        text=text,
                        ts=f"2024-05-0{day}T09:3{seq}:00+02:00",
                    )
                producer.end_session(
                    user_id=USER, session_id=session, ts=f"2024-05-0{day}T09:50:00+02:00"
                )
        await wait_caught_up(served.running.container, [USER], timeout_s=120)
        yield served


def assert_trace_agrees(answer: Recall, dense_weight: float) -> None:
    trace = answer.trace
    assert trace is not None
    returned = {m.id for m in answer.memories}
    leaves = {leaf.id: leaf for leaf in trace.leaves}
    climbed = {climb.id: climb for climb in trace.climbed}
    for memory in answer.memories:
        found = leaves.get(memory.id) if memory.level == 1 else climbed.get(memory.id)
        assert found is not None and found.returned, memory.id
    marked = {i for i, x in (leaves | climbed).items() if x.returned}  # type: ignore[operator]
    assert marked == returned
    for climb in trace.climbed:
        assert set(climb.from_ids) <= set(leaves), climb.id
    dropped = {d.id for d in trace.dropped}
    assert not dropped & returned
    assert trace.tokens == answer.tokens and trace.max_tokens > 0
    assert trace.plan.complexity == answer.complexity and trace.plan.pool >= len(trace.leaves) > 0
    assert {"total", "search", "gate"} <= set(trace.timings_ms)
    # Where both channels rank a leaf, their scores make up the fused one.
    both = [leaf for leaf in trace.leaves if leaf.source == "both"]
    assert both
    for leaf in both:
        assert leaf.dense is not None and leaf.lexical is not None and leaf.fused is not None
        made = dense_weight * leaf.dense + (1 - dense_weight) * leaf.lexical
        assert abs(made - leaf.fused) < 1e-3, leaf.id


async def test_an_explained_recall_agrees_with_its_answer_sync_and_async(stack: Served) -> None:
    async with AsyncRecallClient(stack.url, api_key=API_KEY) as memory:
        plain = await memory.recall(USER, QUESTION, complexity="complex")
        explained = await memory.recall(USER, QUESTION, complexity="complex", explain=True)
    assert plain.trace is None
    assert [m.id for m in plain.memories] == [m.id for m in explained.memories]
    weight = stack.settings.recall.options().dense_weight
    assert_trace_agrees(explained, weight)
    assert any(leaf.returned and "Tom" in leaf.text for leaf in explained.trace.leaves)  # type: ignore[union-attr]

    def blocking() -> Recall:
        with RecallClient(stack.url, api_key=API_KEY) as memory:
            return memory.recall(USER, QUESTION, explain=True, max_tokens=40)

    cut = await asyncio.to_thread(blocking)
    assert_trace_agrees(cut, weight)
    assert cut.trace is not None and cut.trace.max_tokens == 40


async def test_users_are_searched_by_prefix_and_overviewed(stack: Served) -> None:
    auth = {"Authorization": f"Bearer {API_KEY}"}
    async with httpx.AsyncClient(base_url=stack.url, headers=auth, timeout=30) as http:
        found = (await http.get("/v1/users", params={"prefix": "explain-"})).json()
        none = (await http.get("/v1/users", params={"prefix": "nobody-"})).json()
        overview = await http.get(f"/v1/users/{USER}/overview")
        unknown = await http.get("/v1/users/nobody/overview")
        bad_cursor = await http.get("/v1/users", params={"cursor": "%%%"})
    [item] = found["items"]
    assert item["user_id"] == USER and item["memories"] >= 2 and item["last_seen"]
    assert found["next_cursor"] is None and none == {"items": [], "next_cursor": None}
    assert overview.status_code == 200, overview.text
    body = overview.json()
    assert body["counts"]["1"] == item["memories"] and body["counts"]["2"] >= 1
    assert set(body["counts"]) == {"1", "2", "3", "4", "5"}
    assert body["first_at"] < body["last_at"] and body["last_written_at"]
    assert body["degraded"] == 0 and isinstance(body["pending_windows"], list)
    assert unknown.status_code == 404 and bad_cursor.status_code == 422
