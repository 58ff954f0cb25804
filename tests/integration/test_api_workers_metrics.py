"""Two `memstream serve` processes on one port, as `MEMSTREAM_API_WORKERS=2` runs them: a
scrape reaches one of them, and whichever it is, it counts the requests of both; with a
shared model server, neither has a model process of its own."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from memstream.entrypoints.api_workers import (
    WORKER_COMMAND,
    metrics_directory,
    model_server_command,
    start_directory,
    worker_environment,
)
from memstream.entrypoints.embedded.processes import free_port
from memstream.settings import Settings

pytestmark = pytest.mark.integration

WORKERS = 2
REQUESTS = 40
SCRAPES = 12
PROFILE_ROUTE = "/v1/users/{user_id}/profile"


def _get(port: int, path: str) -> tuple[int, bytes]:
    """One request on a connection of its own: the kernel picks a process per connection."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path)
        reply = connection.getresponse()
        return reply.status, reply.read()
    finally:
        connection.close()


def _profile_requests(exposition: bytes) -> float:
    """Profile requests the scraped process reports, summed over statuses."""
    for family in text_string_to_metric_families(exposition.decode()):
        if family.name == "memstream_http_requests":
            return sum(
                s.value
                for s in family.samples
                if s.name.endswith("_total") and s.labels.get("route") == PROFILE_ROUTE
            )
    return 0.0


@contextmanager
def _serving(
    settings: Settings, scratch: Path, port: int, extra: dict[str, str] | None = None
) -> Iterator[list[subprocess.Popen]]:
    on_port = settings.model_copy(
        update={"api_host": "127.0.0.1", "api_port": port, "data_dir": scratch}
    )
    started = start_directory(on_port, WORKERS)
    env = worker_environment(on_port, metrics_directory(on_port), started) | {
        "MEMSTREAM_KAFKA_BOOTSTRAP": settings.broker.bootstrap,
        "MEMSTREAM_REDIS_URL": settings.redis.url,
        "MEMSTREAM_REDIS_NAMESPACE": settings.redis.namespace,
        "MEMSTREAM_TOPIC_PREFIX": settings.broker.topic_prefix,
        "MEMSTREAM_QDRANT_URL": "",  # each its own in-process engine: no search is made here
        "MEMSTREAM_EMBEDDER": "hashing",
        "MEMSTREAM_RECALL_AUTH_DISABLED": "true",
        "MEMSTREAM_LOG_LEVEL": "WARNING",
        **(extra or {}),
    }
    workers = []
    for n in range(WORKERS):
        data = scratch / f"worker-{n}"
        log = (scratch / f"worker-{n}.log").open("wb")
        workers.append(
            subprocess.Popen(
                [sys.executable, *WORKER_COMMAND],
                env=env | {"MEMSTREAM_DATA_DIR": str(data)},
                stderr=log,
            )
        )
    try:
        yield workers
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=30)


def _until_both_answer(port: int, workers: list[subprocess.Popen], timeout_s: float) -> None:
    """Until /healthz answers as many times in a row as there are workers, twice over (each
    answer may come from either)."""
    deadline = time.monotonic() + timeout_s
    in_a_row = 0
    while in_a_row < 2 * WORKERS:
        if any(w.poll() is not None for w in workers):
            raise RuntimeError("a worker exited during start-up")
        if time.monotonic() > deadline:
            raise TimeoutError("the workers did not answer")
        try:
            in_a_row = in_a_row + 1 if _get(port, "/healthz")[0] == 200 else 0
        except OSError:
            in_a_row = 0
            time.sleep(0.1)  # a poll with a deadline: nothing listens yet


def _until_counted(port: int, requests: int, timeout_s: float) -> None:
    """Until a scrape reports `requests` profile requests (a poll with a deadline)."""
    deadline = time.monotonic() + timeout_s
    while _profile_requests(_get(port, "/metrics")[1]) < requests:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no scrape counted the {requests} requests")
        time.sleep(0.05)


def test_each_scrape_counts_the_requests_of_every_worker(
    settings: Settings, tmp_path: Path
) -> None:
    port = free_port()
    with _serving(settings, tmp_path, port) as workers:
        _until_both_answer(port, workers, timeout_s=120)
        statuses = {_get(port, "/v1/users/metrics-user/profile")[0] for _ in range(REQUESTS)}
        # A request is counted once its response has gone out, so the last one's count may
        # trail its reply: wait until a scrape sees them all, then every scrape must.
        _until_counted(port, REQUESTS, timeout_s=10)
        counts = []
        for _ in range(SCRAPES):
            status, body = _get(port, "/metrics")
            assert status == 200
            counts.append(_profile_requests(body))
        files = sorted(p.name for p in (tmp_path / "api-metrics").iterdir())

    assert statuses <= {200, 404}
    # One process alone would report its share (about half) in about half the scrapes.
    assert counts == [REQUESTS] * SCRAPES
    # Both processes wrote their series, so both served (the kernel spread the connections).
    assert len({name.rsplit("_", 1)[-1] for name in files if name.startswith("counter_")}) == 2


def test_workers_that_share_a_model_server_answer_recall_without_a_model_of_their_own(
    settings: Settings, tmp_path: Path
) -> None:
    # What `serve` runs with MEMSTREAM_API_SHARED_MODEL: the model server first, then the
    # workers, told where it listens. Each recall embeds its query through the server.
    port = free_port()
    models = settings.data_dir / "models"  # the session's: the graph is exported once
    shared = settings.model_copy(
        update={
            "data_dir": tmp_path,
            "model_cache_dir": models,
            "embedder": "local",
            "embed_runtime": "onnx-int8",
        }
    )
    cleanup = ExitStack()  # the socket's directory, were tmp_path too long for a socket
    command, socket_path = model_server_command(shared, cleanup)
    server = subprocess.Popen(command, stderr=(tmp_path / "model-server.log").open("wb"))
    try:
        extra = {
            "MEMSTREAM_EMBEDDER": "local",
            "MEMSTREAM_EMBED_RUNTIME": "onnx-int8",
            "MEMSTREAM_MODEL_CACHE_DIR": str(models),
            "MEMSTREAM_EMBED_SERVER": str(socket_path),
        }
        with _serving(settings, tmp_path, port, extra) as workers:
            _until_both_answer(port, workers, timeout_s=300)
            statuses = [_recall(port, f"Where did Ana move in week {n}?") for n in range(8)]
            children = {w.pid: psutil.Process(w.pid).children() for w in workers}
    finally:
        server.terminate()
        server.wait(timeout=30)
        cleanup.close()

    assert statuses == [200] * 8
    assert children == {w.pid: [] for w in workers}  # no model process of their own


def _recall(port: int, query: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        body = json.dumps({"user_id": "nobody-yet", "query": query})
        connection.request("POST", "/v1/recall", body, {"Content-Type": "application/json"})
        reply = connection.getresponse()
        reply.read()
        return reply.status
    finally:
        connection.close()
