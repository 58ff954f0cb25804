"""`memstream up` with its recall API in a process of its own (MEMSTREAM_UP_API_PROCESS): a
turn written by the write path's process is recalled through the API process, which reads
the index and the marks from the other; the stack stops when the API process dies."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from memstream.client import AsyncMemstreamProducer, AsyncRecallClient
from memstream.entrypoints.embedded.processes import free_port

from .up_output import read_until_ready

pytestmark = pytest.mark.integration

# Deadlines for a loaded test machine, not pauses.
READY_S = 60.0
WAIT_MS = 20_000
STOP_S = 30.0


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # Short: the index server's Unix socket lives in it (108 bytes at most).
    path = Path(tempfile.mkdtemp(prefix="up-api-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _api_process(parent: int) -> psutil.Process:
    [api] = [
        child
        for child in psutil.Process(parent).children()
        if "serve" in child.cmdline() and "memstream.entrypoints.cli" in " ".join(child.cmdline())
    ]
    return api


async def test_a_turn_is_recalled_through_the_api_process_and_its_death_stops_the_stack(
    data_dir: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    port, metrics_port = free_port(), free_port()
    env |= {
        "MEMSTREAM_METRICS_PORT": str(metrics_port),
        "MEMSTREAM_DATA_DIR": str(data_dir),
        "MEMSTREAM_API_PORT": str(port),
        "MEMSTREAM_UP_API_PROCESS": "true",
        "MEMSTREAM_EMBEDDER": "hashing",  # no model to load: the test is about the processes
        "MEMSTREAM_API_MAX_WAIT_MS": str(WAIT_MS),
        "COLUMNS": "200",
    }
    cli = Path(sys.executable).with_name("memstream")
    proc = await asyncio.create_subprocess_exec(
        str(cli), "up", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        printed = await asyncio.wait_for(read_until_ready(proc), READY_S)
        api = _api_process(proc.pid)
        children = psutil.Process(proc.pid).children(recursive=True)
        # `Ready.` came once the API process answers: a recall at once is served by it.
        async with (
            AsyncMemstreamProducer(
                printed["MEMSTREAM_KAFKA_BOOTSTRAP"], idempotent=False
            ) as producer,
            AsyncRecallClient(printed["MEMSTREAM_RECALL_URL"]) as memory,
        ):
            text = "Remember this: my locker code at the gym is 4711."
            said = await producer.publish_turn(
                user_id="apart-ann", session_id="s1", seq=0, text=text, flush=True
            )
            answer = await memory.recall("apart-ann", text, after=said, wait_ms=WAIT_MS)
        assert not answer.pending, answer
        assert [m for m in answer.memories if said.event_id in m.source_ids and "4711" in m.text]
        assert (data_dir / "index.sock").exists()
        # The API's /metrics is its own process's; the write path serves the segmenter's.
        async with httpx.AsyncClient() as http:
            written = await http.get(f"http://127.0.0.1:{metrics_port}/metrics")
            api_metrics = await http.get(f"{printed['MEMSTREAM_RECALL_URL']}/metrics")
        assert written.status_code == 200
        assert "memstream_segmenter_" in written.text
        assert "memstream_recall_" in api_metrics.text

        api.kill()
        started = time.monotonic()
        _, stderr = await asyncio.wait_for(proc.communicate(), STOP_S)
        stopped_s = time.monotonic() - started
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    # The API process was killed by SIGKILL: the stack exits as a shell reports that.
    assert proc.returncode == 128 + signal.SIGKILL, stderr.decode()[-2000:]
    assert b"the API process exited with code -9" in stderr
    assert stopped_s < STOP_S
    _, alive = psutil.wait_procs(children, timeout=10)
    assert alive == []
