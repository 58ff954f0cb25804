"""The embedded stack: endpoints that serve, external parts left alone, nothing left behind."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import httpx
import psutil
import pytest
import redis.asyncio as aioredis

from memstream.adapters.kafka.admin import admin_client
from memstream.bootstrap import open_index
from memstream.contracts.catalog import load_catalog
from memstream.entrypoints.embedded.commands import run_up
from memstream.entrypoints.embedded.processes import free_port
from memstream.entrypoints.embedded.stack import EmbeddedStack
from memstream.settings import Settings

from .up_output import read_until_ready

pytestmark = pytest.mark.integration


def _accepts(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1.0):
            return True
    except OSError:
        return False


def _redis_address(url: str) -> str:
    match = re.match(r"redis://([^/]+)", url)
    assert match, url
    return match.group(1)


async def test_endpoints_serve(embedded_stack: EmbeddedStack) -> None:
    ends, settings = embedded_stack.endpoints, embedded_stack.settings()

    assert ends.embedded == {"kafka", "redis", "qdrant"}
    assert (settings.broker.bootstrap, settings.redis.url) == (ends.kafka_bootstrap, ends.redis_url)
    client = aioredis.from_url(ends.redis_url)
    try:
        assert await client.ping()  # type: ignore[misc]  # typed for sync and async clients
    finally:
        await client.aclose()
    async with admin_client(ends.kafka_bootstrap) as admin:
        assert len((await admin.describe_cluster())["brokers"]) == 1
    assert ends.qdrant_path is not None and ends.qdrant_path.is_dir()
    assert ends.qdrant_path.is_relative_to(settings.data_dir)


async def test_configured_parts_are_not_started(
    embedded_stack: EmbeddedStack, tmp_path: Path
) -> None:
    ends = embedded_stack.endpoints
    external = Settings(
        kafka_bootstrap=ends.kafka_bootstrap,
        redis_url=ends.redis_url,
        qdrant_url="http://qdrant.invalid:6333",
        data_dir=tmp_path,
    )
    async with EmbeddedStack(external, create_topics=False) as stack:
        assert stack.child_pids == []
        assert stack.endpoints.embedded == frozenset()
        assert stack.endpoints.qdrant_location == "http://qdrant.invalid:6333"


async def test_second_stack_on_same_data_dir_is_refused(embedded_stack: EmbeddedStack) -> None:
    with pytest.raises(RuntimeError, match="another memstream stack"):
        await EmbeddedStack(embedded_stack.settings(), create_topics=False).start()


async def test_parts_that_fail_to_start_stop_the_stack(tmp_path: Path) -> None:
    children: list[psutil.Process] = []
    topics: list[str] = []

    def on_endpoints(stack: EmbeddedStack) -> None:
        children.extend(psutil.Process(pid) for pid in stack.child_pids)
        topics.extend(status.name for status in stack.topics)

    # An index of another size already in the data dir: connecting the parts fails.
    settings = Settings(data_dir=tmp_path, topic_prefix="fail.", embedder="hashing")
    await _index_of_another_size(settings)
    with pytest.raises(ValueError, match="dense size"):
        await run_up(settings, on_endpoints, on_started=lambda: None)

    assert len(children) == 2
    assert [c.pid for c in children if c.is_running()] == []
    assert topics and all(name.startswith("fail.") for name in topics)


async def test_up_stops_everything_on_sigint(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    api_port = free_port()
    env |= {
        "MEMSTREAM_DATA_DIR": str(tmp_path),
        "COLUMNS": "200",
        "MEMSTREAM_API_PORT": str(api_port),
    }
    cli = Path(sys.executable).with_name("memstream")
    proc = await asyncio.create_subprocess_exec(
        str(cli), "up", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        printed = await asyncio.wait_for(read_until_ready(proc), timeout=120)
        kafka, redis_url = printed["MEMSTREAM_KAFKA_BOOTSTRAP"], printed["MEMSTREAM_REDIS_URL"]
        async with admin_client(kafka) as admin:
            topics = set(await admin.list_topics())
        assert {spec.name for spec in load_catalog()} <= topics
        children = psutil.Process(proc.pid).children(recursive=True)
        commands = [" ".join(c.cmdline()) for c in children]
        assert sum("tansu" in c for c in commands) == 1, commands
        assert sum("redis-server" in c for c in commands) == 1, commands
        # The recall API runs in a process of its own (MEMSTREAM_UP_API_PROCESS, the default);
        # the rest is the embedding models' processes (with multiprocessing's resource tracker).
        assert sum(c.endswith("app() serve") for c in commands) == 1, commands
        others = [
            c
            for c in commands
            if "tansu" not in c and "redis-server" not in c and not c.endswith("app() serve")
        ]
        assert all("multiprocessing" in c for c in others), others
        # The workers and the recall API run on top; "Ready" means the API answers now.
        assert printed["MEMSTREAM_RECALL_URL"] == f"http://127.0.0.1:{api_port}"
        async with httpx.AsyncClient() as client:
            health = await client.get(f"http://127.0.0.1:{api_port}/healthz", timeout=5)
        assert health.status_code == 200
        await _until_ready(f"http://127.0.0.1:{api_port}/readyz", timeout_s=90)

        proc.send_signal(signal.SIGINT)
        _, stderr = await asyncio.wait_for(proc.communicate(), timeout=30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()

    assert proc.returncode == 0, stderr.decode()
    # multiprocessing's resource tracker leaves once it reads the end of its pipe: soon after.
    _, alive = psutil.wait_procs(children, timeout=10)
    assert alive == []
    assert not _accepts(kafka)
    assert not _accepts(_redis_address(redis_url))


async def _index_of_another_size(settings: Settings) -> None:
    async with AsyncExitStack() as stack:
        await open_index(settings, settings.qdrant.collection, settings.embedding.dim + 1, stack)


async def _until_ready(url: str, timeout_s: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    async with httpx.AsyncClient() as client:
        while True:
            try:
                if (await client.get(url, timeout=2)).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert loop.time() < deadline, f"{url} not ready within {timeout_s} s"
            await asyncio.sleep(0.25)
