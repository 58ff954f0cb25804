"""Readiness tells the truth about a Redis that refuses memstream's commands (issue #39).

A plain client pointed at a cluster node answers PING, then has every commit redirected or
refused; a cluster that lost a primary answers CLUSTERDOWN. Each must fail the readiness
probe with its reason, and be counted by kind.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import httpx
import pytest

from memstream.adapters.redis.connection import open_client
from memstream.adapters.redis.errors import StoreRefused
from memstream.adapters.redis.tree import RedisTree
from memstream.edges.probes import process_registry
from memstream.entrypoints.runner import Part, run_parts
from memstream.metrics import Metrics
from memstream.settings import Settings

from .redis_cluster import RedisClusterNodes, running_cluster
from .tree_contract import scratch_tree

pytestmark = pytest.mark.integration

REDIRECTED = ("moved", "crossslot")
# The cluster nodes' timeout is 2 s: a lost primary fails the cluster within a few.
CLUSTER_FAILS_WITHIN_S = 20.0


async def test_a_plain_client_on_a_cluster_is_refused_and_says_why(
    redis_cluster: RedisClusterNodes,
) -> None:
    errors: list[str] = []
    client = open_client(redis_cluster.url, cluster=False)
    try:
        tree = RedisTree(client, f"ready-{uuid.uuid4().hex[:12]}", on_error=errors.append)
        assert await client.ping()  # what the old probe asked: it looked ready
        with pytest.raises(StoreRefused) as refused:
            await tree.ping()
        assert refused.value.kind in REDIRECTED
        assert str(refused.value).startswith(refused.value.kind + ": ")
        assert errors == [refused.value.kind]
    finally:
        await client.aclose()
    async with scratch_tree(redis_cluster.url, "ready", cluster=True) as tree:
        assert await tree.ping()  # the same cluster, in cluster mode


async def test_a_worker_on_a_cluster_without_cluster_mode_fails_readyz_with_the_reason(
    settings: Settings, redis_cluster: RedisClusterNodes, tmp_path: Path
) -> None:
    wrong = settings.model_copy(
        update={
            "redis_url": redis_cluster.url,
            "data_dir": tmp_path / "data",
            "embedder": "hashing",
            "metrics_port": 0,
        }
    )
    metrics = Metrics(process_registry())
    scheduler = run_parts(wrong, {Part.SCHEDULER}, metrics=metrics, probes_host="127.0.0.1")
    async with scheduler as running, httpx.AsyncClient() as http:
        reply = await http.get(f"http://127.0.0.1:{running.probes_port}/readyz")
    assert reply.status_code == 503
    body = reply.json()
    assert body["down"] == ["redis"]
    kind = body["reasons"]["redis"].split(":")[0]
    assert kind in REDIRECTED
    counted = metrics.registry.get_sample_value(
        "memstream_store_errors_total", {"store": "redis", "kind": kind}
    )
    assert counted is not None and counted >= 1


async def test_a_cluster_that_lost_a_primary_is_not_ready(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "cluster") as nodes:
        client = open_client(nodes.url, cluster=True)
        tree = RedisTree(client, "down", cluster=True)  # reads only: nothing to clean up
        try:
            assert await tree.ping()
            nodes.kill(2)  # no replica takes its slots over
            deadline = time.monotonic() + CLUSTER_FAILS_WITHIN_S
            kinds: list[str] = []
            while "cluster_down" not in kinds:
                assert time.monotonic() < deadline, f"still answering: {kinds}"
                await asyncio.sleep(0.05)  # the next probe
                try:
                    await tree.ping()
                except StoreRefused as exc:
                    kinds.append(exc.kind)
            # Until the others notice, a probe routed to the lost node cannot connect.
            assert set(kinds) <= {"connection", "timeout", "cluster_down"}
        finally:
            await client.aclose()
