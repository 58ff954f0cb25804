"""Observability end to end: a real Prometheus scrapes the pipeline while demo traffic flows,
and the container entry commands start and pass their readiness checks."""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import yaml
from typer.main import get_command

from memstream.domain.models import Level
from memstream.edges.probes import process_registry
from memstream.entrypoints.cli import app as cli_app
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.demo.run import DEMO_FILE, DEMO_OVERRIDES, demo_users
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.metrics import CONSOLIDATED_LEVELS, Metrics
from memstream.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "deploy/prometheus/alerts.yml"
DASHBOARD = ROOT / "deploy/grafana/dashboards/memstream.json"
JOB = "memstream-all"
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def poll(check: Callable[[], Awaitable[T | None]], *, timeout_s: float, what: str) -> T:
    """`check()` until it returns something other than None, or fail after `timeout_s`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        found = await check()
        if found is not None:
            return found
        if loop.time() > deadline:
            pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}")
        await asyncio.sleep(0.5)


def dashboard_queries() -> dict[str, list[str]]:
    dashboard = json.loads(DASHBOARD.read_text())
    return {
        p["title"]: [t["expr"] for t in p["targets"]]
        for p in dashboard["panels"]
        if p.get("targets")
    }


def alert_queries() -> dict[str, str]:
    rules = yaml.safe_load(ALERTS.read_text())
    return {r["alert"]: r["expr"] for g in rules["groups"] for r in g["rules"]}


# --- a real Prometheus ----------------------------------------------------------------------


class PrometheusAPI:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    async def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector (or scalar as one sample) of `expr`; fails on a query error."""
        reply = await self._client.get("/api/v1/query", params={"query": expr})
        body = reply.json()
        assert reply.status_code == 200 and body["status"] == "success", f"{expr}: {body}"
        data = body["data"]
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        return list(data["result"])

    async def finite_values(self, expr: str) -> dict[str, float]:
        """Finite, positive values of `expr` by their label set (NaN means "no rate yet")."""
        values: dict[str, float] = {}
        for sample in await self.query(expr):
            number = float(sample["value"][1])
            if math.isfinite(number) and number > 0:
                values[json.dumps(sample["metric"], sort_keys=True)] = number
        return values

    async def rules(self) -> list[dict[str, Any]]:
        reply = await self._client.get("/api/v1/rules")
        return [r for g in reply.json()["data"]["groups"] for r in g["rules"]]


def tail(path: Path, chars: int = 4000) -> str:
    return path.read_text(errors="replace")[-chars:]


def start_prometheus(workdir: Path, target_port: int, port: int) -> subprocess.Popen[bytes]:
    """The Debian `prometheus` binary scraping one target every second, with our rules."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("prometheus is missing: apt-get install prometheus (Debian package)")
    workdir.mkdir(parents=True, exist_ok=True)
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(ALERTS)],
        "scrape_configs": [
            {"job_name": JOB, "static_configs": [{"targets": [f"127.0.0.1:{target_port}"]}]}
        ],
    }
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
    with (workdir / "prometheus.log").open("wb") as log:
        return subprocess.Popen(
            [
                binary,
                f"--config.file={workdir / 'prometheus.yml'}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def stop(process: subprocess.Popen[bytes], timeout_s: float = 15) -> int:
    if process.poll() is None:
        process.terminate()
    try:
        return process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


@asynccontextmanager
async def prometheus(workdir: Path, target_port: int) -> AsyncIterator[PrometheusAPI]:
    port = free_port()
    process = await asyncio.to_thread(start_prometheus, workdir, target_port, port)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:

            async def ready() -> bool | None:
                if process.poll() is not None:
                    pytest.fail(f"prometheus exited: {tail(workdir / 'prometheus.log')}")
                try:
                    return (await client.get("/-/ready")).status_code == 200 or None
                except httpx.TransportError:
                    return None

            await poll(ready, timeout_s=30, what="Prometheus to be ready")
            yield PrometheusAPI(client)
    finally:
        await asyncio.to_thread(stop, process)


async def test_prometheus_scrapes_the_pipeline_and_the_dashboard_and_alerts_evaluate(
    settings: Settings, tmp_path: Path
) -> None:
    local = settings.model_copy(
        update={
            **DEMO_OVERRIDES,
            "data_dir": tmp_path / "data",
            "embedder": "hashing",
            "metrics_port": 0,
        }
    )
    metrics = Metrics(process_registry())
    async with run_parts(
        local,
        WRITE_PATH,
        metrics=metrics,
        probes_host="127.0.0.1",
        collect_interval_s=1.0,
        fast_rebalance=True,
    ) as worker:
        port = worker.probes_port
        assert port is not None
        async with prometheus(tmp_path / "prometheus", port) as prom:

            async def scraped() -> bool | None:
                return bool(await prom.finite_values(f'up{{job="{JOB}"}}')) or None

            await poll(scraped, timeout_s=30, what="the first scrape")  # counters seen at zero
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as probe:
                assert (await probe.get("/healthz")).status_code == 200
                assert (await probe.get("/readyz")).status_code == 200

            container = worker.container
            await publish_file(
                DEMO_FILE,
                catalog=container.catalog,
                bootstrap=local.broker.bootstrap,
                show_progress=False,
            )
            await wait_caught_up(container, demo_users(), timeout_s=180)
            # The demo's settings keep its story's sessions whole: one L2 a session id.
            for user, session_ids in story_sessions().items():
                assert await container.tree.count(user, Level.SESSION) == len(session_ids)

            panels = dashboard_queries()
            [ingest] = panels["Ingest rate by outcome"]
            p50, p95 = (
                panels["Consolidation lag p50 by level"],
                panels["Consolidation lag p95 by level"],
            )

            async def ingest_shown() -> dict[str, float] | None:
                return await prom.finite_values(ingest) or None

            rates = await poll(ingest_shown, timeout_s=60, what="the ingest panel to show data")
            assert any('"accepted"' in labels for labels in rates)

            async def lag_shown() -> dict[str, float] | None:
                found = {**await prom.finite_values(p50[0]), **await prom.finite_values(p95[0])}
                levels = {json.loads(labels)["level"] for labels in found}
                return found if levels == set(CONSOLIDATED_LEVELS) else None

            lags = await poll(lag_shown, timeout_s=60, what="consolidation lag for L2-L5")
            assert all(0 < v < 300 for v in lags.values()), lags  # seconds, on one machine

            # Every expression of the dashboard and of the rules evaluates without error.
            for exprs in panels.values():
                for expr in exprs:
                    await prom.query(expr)
            for expr in alert_queries().values():
                await prom.query(expr)
            # The backlog collector reported: pending windows per level, lag per partition.
            pending = await prom.query(panels["Windows pending by level"][0])
            assert {s["metric"]["level"] for s in pending} == set(CONSOLIDATED_LEVELS)
            assert await prom.query(panels["Consumer lag by group and topic"][0])

            async def rules_evaluated() -> list[dict[str, Any]] | None:
                rules = await prom.rules()
                done = all(r.get("lastEvaluation", "").startswith("20") for r in rules)
                return rules if rules and done else None

            rules = await poll(
                rules_evaluated, timeout_s=30, what="the alert rules to be evaluated"
            )
            assert {r["name"] for r in rules} == set(alert_queries())
            assert [r["name"] for r in rules if r["health"] != "ok"] == []


# --- the container entry commands ----------------------------------------------------------


def registered_commands() -> set[str]:
    return set(get_command(cli_app).commands)  # type: ignore[attr-defined]


@contextmanager
def entry_command(
    args: list[str], env: dict[str, str], log_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """`memstream ARGS` as a container runs it; SIGTERM on exit, as the orchestrator does."""
    memstream = Path(sys.executable).with_name("memstream")
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(memstream), *args], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            yield process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def container_env(settings: Settings, data_dir: Path, **extra: str) -> dict[str, str]:
    own = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    return own | {
        "MEMSTREAM_KAFKA_BOOTSTRAP": settings.broker.bootstrap,
        "MEMSTREAM_REDIS_URL": settings.redis.url,
        "MEMSTREAM_TOPIC_PREFIX": settings.broker.topic_prefix,
        "MEMSTREAM_CONSUMER_GROUP": settings.broker.consumer_group,
        "MEMSTREAM_QDRANT_COLLECTION": settings.qdrant.collection,
        # Qdrant local mode: one data directory per process, as each pod has its own.
        "MEMSTREAM_DATA_DIR": str(data_dir),
        "MEMSTREAM_EMBEDDER": "hashing",
        "MEMSTREAM_LOG_LEVEL": "WARNING",
        **extra,
    }


async def wait_ready(
    process: subprocess.Popen[bytes], port: int, log_path: Path, expected_metric: str
) -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:

        async def ready() -> bool | None:
            if process.poll() is not None:
                pytest.fail(f"exited with {process.returncode}:\n{tail(log_path)}")
            try:
                return (await client.get("/readyz")).status_code == 200 or None
            except httpx.TransportError:
                return None

        await poll(ready, timeout_s=120, what=f"/readyz of {log_path.stem}")
        metrics = (await client.get("/metrics")).text
        assert expected_metric in metrics, f"{log_path.stem} does not serve memstream.metrics"
        assert (await client.get("/healthz")).status_code == 200


async def test_worker_roles_start_and_pass_readiness(settings: Settings, tmp_path: Path) -> None:
    assert "worker" in registered_commands(), "cli.py must register `memstream worker`"
    roles = ("segmenter", "consolidator", "scheduler")
    ports = {role: free_port() for role in roles}
    logs = {role: tmp_path / f"{role}.log" for role in roles}
    with (
        entry_command(
            ["worker", "--role", "segmenter"],
            container_env(
                settings, tmp_path / "segmenter", MEMSTREAM_METRICS_PORT=str(ports["segmenter"])
            ),
            logs["segmenter"],
        ) as segmenter,
        entry_command(
            ["worker", "--role", "consolidator"],
            container_env(
                settings,
                tmp_path / "consolidator",
                MEMSTREAM_METRICS_PORT=str(ports["consolidator"]),
            ),
            logs["consolidator"],
        ) as consolidator,
        entry_command(
            ["worker", "--role", "scheduler"],
            container_env(
                settings, tmp_path / "scheduler", MEMSTREAM_METRICS_PORT=str(ports["scheduler"])
            ),
            logs["scheduler"],
        ) as scheduler,
    ):
        processes = {"segmenter": segmenter, "consolidator": consolidator, "scheduler": scheduler}
        metric = "memstream_ingested_events_total"
        await asyncio.gather(*(wait_ready(processes[r], ports[r], logs[r], metric) for r in roles))
        for process in processes.values():
            process.send_signal(signal.SIGTERM)
        for role, process in processes.items():
            code = await asyncio.to_thread(process.wait, 30)
            assert code == 0, f"{role} exited with {code}:\n{tail(logs[role])}"


async def test_recall_api_starts_and_passes_readiness(settings: Settings, tmp_path: Path) -> None:
    assert "serve" in registered_commands(), "cli.py must register `memstream serve`"
    port = free_port()
    log = tmp_path / "recall.log"
    env = container_env(
        settings,
        tmp_path / "recall",
        MEMSTREAM_API_HOST="127.0.0.1",
        MEMSTREAM_API_PORT=str(port),
        MEMSTREAM_RECALL_API_KEYS='["a-key"]',  # as its Secret gives it in k8s
    )
    with entry_command(["serve"], env, log) as process:
        await wait_ready(process, port, log, "memstream_recall_request_seconds")


def story_sessions() -> dict[str, set[str]]:
    """The session ids of each user of the demo's story."""
    found: dict[str, set[str]] = {}
    for line in DEMO_FILE.read_text(encoding="utf-8").splitlines():
        if line.strip():
            event = json.loads(line)
            found.setdefault(event["user_id"], set()).add(event["session_id"])
    return found
