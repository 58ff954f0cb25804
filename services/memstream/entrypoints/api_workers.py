"""`memstream serve` with `MEMSTREAM_API_WORKERS` > 1: several API processes on one port.

A recall request spends its time in Python (HTTP, validation, ranking) and in the model; one
process uses one core for the first. So `serve` starts N copies of itself, each binding the
port with SO_REUSEPORT (the kernel spreads connections over them). This process only
supervises: it passes SIGINT/SIGTERM on, and
when one worker dies it stops the others and exits with that worker's code, so the
orchestrator restarts the pod whole rather than leave it serving at part strength.

The workers open the port together. Each listens only once its model is warm, and the
first to listen answers /readyz for the whole pod, so a worker that warmed up alone would
take every connection made meanwhile: the orchestrator's readiness probe passes, agents
open their keep-alive connections, and they all stay on that one process, the other cores
idle, until they are closed. So each worker, once warm, marks itself in a start directory
the supervisor empties at every start and waits until all have (`wait_for_each_other`).

The workers share one model: the supervisor first starts a model server
(`adapters/embedding/model_server`) on `<data dir>/model.sock`, and the workers embed
through it; it is watched like a worker. Against a model process per worker
(`MEMSTREAM_API_SHARED_MODEL=false`): one copy of the model in memory, not one per worker,
a faster start (one model loads, not two at once) and, below saturation, less of the API's
CPU a request (no `concurrent.futures` threads in the worker) and a lower median latency;
at saturation the two do not differ beyond noise (docs/figures/recall-under-load.md).

A scrape reaches one worker, so the workers keep their metrics in prometheus_client's
multiprocess files (a fresh directory under the data directory) and each worker's `/metrics`
answers with the sum over all of them. The workers need a
shared Qdrant (`MEMSTREAM_QDRANT_URL`): the in-process engine's shard belongs to one process.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import FrameType

from memstream.adapters import unix_socket
from memstream.metrics import MULTIPROCESS_DIR_VARIABLE
from memstream.settings import Settings

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
WORKER_COMMAND = ("-c", "from memstream.entrypoints.cli import app; app()", "serve")
MODEL_SERVER_COMMAND = ("-c", "from memstream.adapters.embedding.model_server import main; main()")
MODEL_SOCKET = "model.sock"
STOP_GRACE_S = 25.0
EXPECTED_FILE = "expected"  # in the start directory: how many workers open the port
WARM_PREFIX = "warm-"  # then the worker's pid: one file each, once its model is warm
START_POLL_S = 0.05


def die_with_parent() -> None:
    """In the child, before exec: if the supervisor is killed outright, the worker goes too.
    Not Linux (no prctl): the workers would outlive a killed supervisor."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def metrics_directory(settings: Settings) -> Path:
    """Where the workers write their metrics; emptied at every start, since the files of
    processes gone would be counted again (prometheus_client keeps no owner in them)."""
    directory = settings.data_dir / "api-metrics"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    return directory


def start_directory(settings: Settings, workers: int) -> Path:
    """Where `workers` workers wait for each other before they open the port; emptied at
    every start (a marker of a process gone would count as warm)."""
    directory = settings.data_dir / "api-start"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    (directory / EXPECTED_FILE).write_text(str(workers))
    return directory


async def wait_for_each_other(
    directory: Path, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
) -> None:
    """Mark this process warm in `directory`, then return once every worker it expects has.

    No deadline of its own: a worker that fails to warm up exits, and the supervisor then
    stops the others; one that hangs leaves the port closed, which the orchestrator's start-up
    probe sees as it would for a single process."""
    expected = _mark_warm(directory)
    waiting = True
    while (warm := _warm_workers(directory)) < expected:
        if waiting:
            log.info("warm; waiting for %d more API process(es) to open the port", expected - warm)
            waiting = False
        await sleep(START_POLL_S)  # a poll of the directory: other processes write it


# Blocking file calls in an async start-up: a few microseconds on a local directory, once.
def _mark_warm(directory: Path) -> int:
    """Mark this process warm; return how many workers the start expects."""
    (directory / f"{WARM_PREFIX}{os.getpid()}").touch()
    return int((directory / EXPECTED_FILE).read_text())


def _warm_workers(directory: Path) -> int:
    return sum(1 for _ in directory.glob(f"{WARM_PREFIX}*"))


def model_server_command(
    settings: Settings, cleanup: contextlib.ExitStack
) -> tuple[list[str], Path]:
    """The command of the pod's model server, and the socket it will serve on (elsewhere
    than the data directory when that path is too long for a Unix socket: then `cleanup`
    removes the directory it is in)."""
    from memstream.adapters.embedding.embedders import model_server_arguments

    socket_path = unix_socket.socket_path(settings.data_dir, MODEL_SOCKET, cleanup)
    arguments = ["--socket", str(socket_path), *model_server_arguments(settings)]
    return [sys.executable, *MODEL_SERVER_COMMAND, *arguments], socket_path


def worker_environment(
    settings: Settings, metrics_dir: Path, start_dir: Path | None = None
) -> dict[str, str]:
    """The environment of one worker: this one's, bound to the same address, one worker,
    its metrics in `metrics_dir` beside the others', waiting for them in `start_dir`."""
    together = {} if start_dir is None else {"MEMSTREAM_API_START_TOGETHER": str(start_dir)}
    return {
        **os.environ,
        **together,
        MULTIPROCESS_DIR_VARIABLE: str(metrics_dir),
        "MEMSTREAM_API_WORKERS": "1",
        "MEMSTREAM_API_REUSE_PORT": "true",
        "MEMSTREAM_API_HOST": settings.api.host,
        "MEMSTREAM_API_PORT": str(settings.api.port),
        "MEMSTREAM_DATA_DIR": str(settings.data_dir),
    }


def run_workers(settings: Settings) -> int:
    """Run `settings.api.workers` API processes until one exits or a stop signal comes."""
    if not settings.qdrant.url:
        raise ValueError("MEMSTREAM_API_WORKERS > 1 needs MEMSTREAM_QDRANT_URL")
    if settings.api.port == 0:
        raise ValueError("MEMSTREAM_API_WORKERS > 1 needs a fixed MEMSTREAM_API_PORT")
    with contextlib.ExitStack() as cleanup:  # the model server's socket directory, if any
        return _supervise(settings, cleanup)


def _supervise(settings: Settings, cleanup: contextlib.ExitStack) -> int:
    env = worker_environment(
        settings, metrics_directory(settings), start_directory(settings, settings.api.workers)
    )
    model_server: list[subprocess.Popen[bytes]] = []
    if settings.api.shared_model:
        command, socket_path = model_server_command(settings, cleanup)
        model_server.append(subprocess.Popen(command, env=env, preexec_fn=die_with_parent))
        env["MEMSTREAM_EMBED_SERVER"] = str(socket_path)
    workers = [
        subprocess.Popen([sys.executable, *WORKER_COMMAND], env=env, preexec_fn=die_with_parent)
        for _ in range(settings.api.workers)
    ]
    stopping = False

    def stop(signum: int, _: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(signum)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        watched = workers + model_server
        while all(process.poll() is None for process in watched):
            time.sleep(0.2)  # a supervisor's poll, not synchronisation
        code = next(p.returncode for p in watched if p.returncode is not None)
        if not stopping:
            stop(signal.SIGTERM, None)
        deadline = time.monotonic() + STOP_GRACE_S
        for worker in workers:
            try:
                worker.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
        for server in model_server:  # the workers are gone: nothing embeds any more
            server.terminate()
            server.wait()
        return 0 if stopping else (code or 1)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
