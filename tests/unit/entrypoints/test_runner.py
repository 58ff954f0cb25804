"""The runner's choices per set of parts: consumer groups, lag groups, liveness."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from prometheus_client import CollectorRegistry
from tests.unit.fakes import FakeTree, fake_container

from memstream.entrypoints.process_commands import Role, role_parts
from memstream.entrypoints.runner import (
    EVERYTHING,
    WRITE_PATH,
    Part,
    RunningProcess,
    consumer_group,
    lag_groups,
    recent_vectors_kept,
    run_parts,
)
from memstream.metrics import Metrics
from memstream.settings import Settings

SETTINGS = Settings(consumer_group="ms", topic_prefix="t.")


def test_one_consumer_per_process_has_a_group_of_its_own() -> None:
    assert consumer_group(SETTINGS, role_parts(Role.SEGMENTER)) == "ms-segmenter"
    assert consumer_group(SETTINGS, role_parts(Role.CONSOLIDATOR)) == "ms-consolidator"
    assert consumer_group(SETTINGS, role_parts(Role.ALL)) == "ms"
    assert consumer_group(SETTINGS, EVERYTHING) == "ms"


def test_only_a_process_with_the_segmenter_and_the_api_keepsrecent_vectors_kept() -> None:
    # Its recalls' queries may be the messages its segmenter has just embedded.
    assert recent_vectors_kept(SETTINGS, EVERYTHING) == SETTINGS.embedding.recent_vectors > 0
    assert recent_vectors_kept(SETTINGS, role_parts(Role.ALL)) == 0  # a worker: no recall here
    assert recent_vectors_kept(SETTINGS, {Part.API}) == 0


def test_the_collector_reports_the_groups_the_deployment_runs() -> None:
    container = fake_container(SETTINGS, FakeTree())
    assert lag_groups(SETTINGS, role_parts(Role.SCHEDULER), container) == {
        "ms-segmenter": ["t.memstream.turns.v1"],
        "ms-consolidator": ["t.memstream.windows.v1"],
    }
    assert lag_groups(SETTINGS, WRITE_PATH, container) == {
        "ms": ["t.memstream.turns.v1", "t.memstream.windows.v1"]
    }


def test_roles_are_the_write_path_parts() -> None:
    assert role_parts(Role.ALL) == WRITE_PATH
    assert {role_parts(r) for r in Role if r != Role.ALL} == {frozenset({p}) for p in WRITE_PATH}
    assert {Part.API} == EVERYTHING - WRITE_PATH


async def test_a_process_whose_api_stopped_is_not_live() -> None:
    container = fake_container(SETTINGS, FakeTree())
    running = RunningProcess(container, Metrics(CollectorRegistry()), started=True)

    async def serving() -> None:
        await asyncio.Event().wait()

    running.api = asyncio.create_task(serving())
    await asyncio.sleep(0)
    assert running.live() and all((await running.ready()).values())
    running.api.cancel()
    await asyncio.gather(running.api, return_exceptions=True)
    assert not running.live()
    assert await running.ready() == {"started": True, "api": False, "redis": True}


async def test_a_dead_agent_fails_liveness_and_readiness_names_it() -> None:
    from aiohttp import ClientSession

    from memstream.edges.probes import serve_probes

    container = fake_container(SETTINGS, FakeTree())
    running = RunningProcess(container, Metrics(CollectorRegistry()), started=True)

    async def serving() -> None:
        await asyncio.Event().wait()

    running.api = asyncio.create_task(serving())
    async with (
        serve_probes(
            CollectorRegistry(), 0, host="127.0.0.1", live=running.live, ready=running.ready
        ) as port,
        ClientSession(f"http://127.0.0.1:{port}") as http,
    ):
        assert (await http.get("/healthz")).status == 200
        running.api.cancel()  # the part dies
        await asyncio.gather(running.api, return_exceptions=True)
        live = await http.get("/healthz")
        ready = await http.get("/readyz")
        assert (live.status, ready.status) == (503, 503)
        assert (await ready.json())["down"] == ["api"]
        assert (await live.json())["live"] is False


async def test_an_agent_that_died_is_reported_by_name() -> None:
    from memstream.edges.faust.app import AgentHealth

    health = AgentHealth()
    running = RunningProcess(
        fake_container(SETTINGS, FakeTree()),
        Metrics(CollectorRegistry()),
        segmenter=object(),  # type: ignore[arg-type]
        consolidator=object(),  # type: ignore[arg-type]
        started=True,
        agents=health,
    )
    assert health.alive and running.live()
    health.died("ms-segmenter", RecursionError("too deep"))
    assert not health.alive and health.dead == {"ms-segmenter": "RecursionError: too deep"}
    assert not running.live()
    assert running.parts() == {"segmenter": False, "consolidator": True}


class ColdEmbedder:
    """An embedder whose model cannot load: warming it up fails."""

    dim = 8

    async def warm_up(self) -> None:
        raise RuntimeError("model failed to load")

    async def embed(self, texts: list[str]) -> list[list[float]]:
        raise AssertionError("nothing may embed before the warm-up")


async def test_a_model_that_cannot_load_stops_the_start_before_the_group_join() -> None:
    # The warm-up runs while the consumer starts (no broker here: its start would fail
    # with a connection error, later): the model's error is the one reported.
    container = dataclasses.replace(fake_container(SETTINGS, FakeTree()), embedder=ColdEmbedder())
    started: list[bool] = []
    with pytest.raises(RuntimeError, match="model failed to load"):
        async with run_parts(container, {Part.SEGMENTER}, on_started=lambda: started.append(True)):
            pass
    assert started == []  # never consumed, never ready


async def test_a_process_still_warming_up_is_not_ready() -> None:
    # No part exists while the model loads: an empty set of parts is not "all ready".
    running = RunningProcess(fake_container(SETTINGS, FakeTree()), Metrics(CollectorRegistry()))
    status = await running.ready()
    assert status["started"] is False and not all(status.values())


async def test_a_store_that_refuses_fails_readiness_with_its_reason() -> None:
    from aiohttp import ClientSession

    from memstream.adapters.redis.errors import StoreRefused
    from memstream.edges.probes import serve_probes

    class RefusingTree(FakeTree):
        async def ping(self) -> bool:
            raise StoreRefused("crossslot", "CROSSSLOT Keys in request don't hash")

    running = RunningProcess(
        fake_container(SETTINGS, RefusingTree()), Metrics(CollectorRegistry()), started=True
    )
    async with (
        serve_probes(CollectorRegistry(), 0, host="127.0.0.1", ready=running.ready) as port,
        ClientSession(f"http://127.0.0.1:{port}") as http,
    ):
        ready = await http.get("/readyz")
        assert ready.status == 503
        body = await ready.json()
    assert body["down"] == ["redis"] and body["parts"]["redis"] is False
    assert body["reasons"] == {"redis": "crossslot: CROSSSLOT Keys in request don't hash"}
