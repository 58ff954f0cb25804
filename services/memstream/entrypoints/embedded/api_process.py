"""`memstream up` with `MEMSTREAM_UP_API_PROCESS`: the recall API in a child process.

In one process the segmenter's steps and the API's requests queue in one event loop, which
at a high rate is the queue a read waits in (docs/read-your-writes.md). The API cannot
simply open the index in a process of its own: the in-process engine locks its shard to
the process that opened it. So this process runs the write path (segmenter, consolidator,
clock) with the index, and serves the index and the segmenter's recent vectors on
`<data dir>/index.sock` from a thread (`adapters.qdrant.index_server`); the child runs
`memstream serve` on the same address and settings, reading the index through that socket
(`handoff.index_server`). The segmenter's progress marks reach the child's waiting reads
as they would in one process: the server pushes them down the same socket as they are
written (`recall.writes` keeps its shared poll of Redis as the fallback).

- The child is started first, so that both processes start side by side (its first call
  to the index waits for the socket); `on_started` (`Ready.`) comes once the write path
  runs, the socket listens and the child answers `/healthz`, as it comes in one process
  once the API listens. Not `/readyz`: it also asks whether the stores agree, which a stack
  whose index is being repaired may not for a while, and that start should not hang.
- It dies with this process (PR_SET_PDEATHSIG, as `api_workers` does); if it dies first,
  the stack stops with its exit code (128 + N if signal N killed it, 1 if it exited 0), as
  `serve`'s supervisor does.
- A stop signal stops the child first, then the write path, then the index server.
- The API's `/metrics` is the child's own; the write path's metrics and probes are served
  by this process, as `memstream worker` serves them: on `MEMSTREAM_METRICS_PORT` when it
  is set, else on a free port, logged (two stacks on one machine must not both want 9108).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import httpx

from memstream.adapters import unix_socket
from memstream.adapters.embedding.recent import RecentVectors
from memstream.adapters.qdrant.index_server import serving
from memstream.edges.tracing import configure as configure_tracing
from memstream.entrypoints.api_workers import WORKER_COMMAND, die_with_parent
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.settings import Settings

log = logging.getLogger(__name__)

INDEX_SOCKET = "index.sock"
READY_TIMEOUT_S = 300.0  # the child's model may be exported on a first start
READY_POLL_S = 0.1
LIVE_POLL_S = 0.5
STOP_GRACE_S = 25.0


def api_environment(settings: Settings, socket_path: Path) -> dict[str, str]:
    """The child's environment: this one's, with the stack's endpoints (`EmbeddedStack.
    settings`) and the index server's socket."""
    return {
        **os.environ,
        "MEMSTREAM_KAFKA_BOOTSTRAP": settings.broker.bootstrap,
        "MEMSTREAM_REDIS_URL": settings.redis.url,
        "MEMSTREAM_DATA_DIR": str(settings.data_dir),
        "MEMSTREAM_API_HOST": settings.api.host,
        "MEMSTREAM_API_PORT": str(settings.api.port),
        "MEMSTREAM_RECALL_AUTH_DISABLED": str(settings.api.auth_disabled).lower(),
        "MEMSTREAM_KAFKA_READ_BACK_SKIPPED": str(settings.broker.read_back_skipped).lower(),
        "MEMSTREAM_INDEX_SERVER": str(socket_path),
        "MEMSTREAM_UP_API_PROCESS": "false",
        # One API process: `serve`'s workers would each need a Qdrant server.
        "MEMSTREAM_API_WORKERS": "1",
    }


async def run_with_api_apart(
    settings: Settings, stopping: asyncio.Event, on_started: Callable[[], None]
) -> int:
    """Run the write path here and the API in a child until `stopping` is set (0), a part
    here dies (1) or the child exits (its code, at least 1)."""
    if settings.api.port == 0:
        # `run_up` keeps the API in its own process when the port is 0 (the child's port
        # could not be printed), so only another caller meets this; RuntimeError: said plainly.
        raise RuntimeError("MEMSTREAM_UP_API_PROCESS needs a fixed MEMSTREAM_API_PORT")
    if "metrics_port" not in settings.observability.model_fields_set:
        # A port of its own only when asked for: two stacks on one machine (a benchmark's,
        # a test's) must not both want 9108. The port taken is logged.
        observability = settings.observability.model_copy(update={"metrics_port": 0})
        settings = settings.model_copy(update={"observability": observability})
    with contextlib.ExitStack() as cleanup:
        socket_path = unix_socket.socket_path(settings.data_dir, INDEX_SOCKET, cleanup)
        socket_path.unlink(missing_ok=True)  # an earlier run's: the child waits for this one's
        return await _run(settings, stopping, on_started, socket_path)


async def _run(
    settings: Settings,
    stopping: asyncio.Event,
    on_started: Callable[[], None],
    socket_path: Path,
) -> int:
    # First: the child's imports and model load run while this process starts; it waits for
    # the index server on its first call.
    child = await _start_api(api_environment(settings, socket_path))
    stop_tracing = configure_tracing(settings.observability.otlp_traces_endpoint, "memstream")
    try:
        parts = run_parts(
            settings,
            WRITE_PATH,
            fast_rebalance=True,
            api_apart=True,
            # The API's /metrics is the child's own: the write path's (segmenter lag,
            # consolidation, the index) are served here, as `memstream worker` serves them.
            probes_host=settings.api.host,
        )
        async with parts as running:
            log.info(
                "the write path's /metrics and probes: http://%s:%s/metrics",
                settings.api.host,
                running.probes_port,
            )
            c = running.container
            kept = c.recent if isinstance(c.recent, RecentVectors) else None
            recent = kept.known if kept is not None else None
            with serving(c.index, socket_path, dim=c.embedder.dim, recent=recent) as server:
                c.progress_listeners.append(server.announce)
                if kept is not None:
                    kept.on_kept = server.announce_vectors
                try:
                    await _until_ready(child, settings, stopping)
                    if stopping.is_set():
                        return 0
                    on_started()
                    return await _until_one_stops(child, running.live, stopping)
                finally:
                    await _stop(child)  # before the index server and the write path
                    c.progress_listeners.remove(server.announce)
                    if kept is not None:
                        kept.on_kept = None
    finally:
        await _stop(child)
        if stop_tracing is not None:
            stop_tracing()  # flushes the spans still queued


async def _start_api(env: Mapping[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        *WORKER_COMMAND,
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=sys.stderr,  # this process's stdout is its endpoints and `Ready.`
        # Its own group: a Ctrl+C in the terminal reaches this process, which stops the
        # child first, in order.
        start_new_session=True,
        preexec_fn=die_with_parent,
    )


async def _until_ready(
    child: asyncio.subprocess.Process, settings: Settings, stopping: asyncio.Event
) -> None:
    """Return once the child's `/healthz` answers 200, or `stopping` is set; RuntimeError if
    the child exits or does not answer within READY_TIMEOUT_S."""
    url = f"http://{settings.api.host}:{settings.api.port}/healthz"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + READY_TIMEOUT_S
    async with httpx.AsyncClient(timeout=5.0) as client:
        while not stopping.is_set():
            if child.returncode is not None:
                raise RuntimeError(f"the API process exited with code {child.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(url)).status_code == 200:
                    return
            if loop.time() > deadline:
                raise RuntimeError(f"the API process was not ready in {READY_TIMEOUT_S:g} s")
            with contextlib.suppress(TimeoutError):
                # A poll with a deadline: the child's readiness is another process's state.
                await asyncio.wait_for(child.wait(), READY_POLL_S)


async def _until_one_stops(
    child: asyncio.subprocess.Process, live: Callable[[], bool], stopping: asyncio.Event
) -> int:
    exited = asyncio.ensure_future(child.wait())
    stop = asyncio.ensure_future(stopping.wait())
    try:
        while True:
            await asyncio.wait({exited, stop}, timeout=LIVE_POLL_S, return_when="FIRST_COMPLETED")
            if stop.done():
                return 0
            if exited.done():
                log.error("the API process exited with code %s; stopping", child.returncode)
                return exit_code(child.returncode)
            if not live():
                log.error("a part of the write path stopped; stopping")
                return 1
    finally:
        for waiting in (exited, stop):
            waiting.cancel()


def exit_code(returncode: int | None) -> int:
    """The stack's exit code for its API process's: the same, 128 + N for a process killed by
    signal N (as a shell reports it), 1 for one that exited 0 while nothing stopped it."""
    if returncode is None or returncode == 0:
        return 1
    return 128 - returncode if returncode < 0 else returncode


async def _stop(child: asyncio.subprocess.Process) -> None:
    if child.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(child.wait(), STOP_GRACE_S)
        except TimeoutError:
            child.kill()
            await child.wait()
