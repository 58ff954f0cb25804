"""Recall under load: throughput and p50/p95/p99 of `POST /v1/recall` at 1, 10 and 50
concurrent clients, for one user with 10k memories among others.

    python -m memstream_lab.bench.recall_load --out bench-results/recall-load.json

Setup: the embedded stack's broker and Redis in this process; the tree is the synthetic one
of `recall_latency` (one measured user among `--background-users` others, synthetic stored
vectors), written once. The API runs as `memstream serve` in its own processes (as deployed,
so the load generator here does not share its interpreter), on loopback; `--config
workers=N` starts N of them on one port (SO_REUSEPORT, as `MEMSTREAM_API_WORKERS` does),
each on its own copy of the in-process Qdrant shard, which one process owns, and, as `serve`
does, one model server for them all (`shared_model=0`: a model process each). `code=DIR`
runs the servers from another source tree (e.g. an export of main) to compare in one run;
`--rounds` alternates the configurations that many times, and the JSON's `summary` gives
each configuration's median p95 per level over its rounds and how many rounds met the
level's target (`P95_TARGETS_MS`; one round's tail moves by tens of milliseconds on shared
cores). The JSON also has each configuration's time to ready and memory (PSS of the API's
and the model's processes).

Each client keeps one connection (a minimal HTTP/1.1 client, `KeepAliveConnection`: the
load generator's CPU is taken from the cores the API runs on) and sends its next request
when the last one answers, so the offered load is the clients' concurrency. Per level: a
warm-up, then `--requests` requests (bounded), throughput over that span, latency
percentiles (nearest rank), errors, the server's stage timings (`timings_ms`) at p50 and
p95, and the CPU spent per request, read from /proc: by the API processes, by their model
processes, and by this process with its other children (the load generator, Redis, the
broker: `bench_cpu_ms_per_request`), all on the same cores. On a shared, loaded machine CPU
per request moves much less than wall time, so it is the figure to judge a change of the
request's code by.

`--profile DIR` runs each API process under cProfile (main thread CPU time) and writes its
profile there when it stops (`python -m pstats DIR/<config>-<round>-<worker>.prof`);
profiling slows the servers, so do not read its throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp
import psutil

from memstream.bootstrap import connect, qdrant_edge_dir
from memstream.edges.http.server import event_loop_factory
from memstream.entrypoints.api_workers import model_server_command, start_directory
from memstream.entrypoints.collector import collect_less_often
from memstream.entrypoints.embedded.background import BackgroundStack
from memstream.settings import Settings
from memstream_lab.bench.api_config import parse_config
from memstream_lab.bench.cpu import pss_mb
from memstream_lab.bench.keepalive import KeepAliveConnection
from memstream_lab.bench.synthetic import BACKGROUND_L1, USER, queries, tree_nodes, write_nodes
from memstream_lab.measure import free_port, ms_since, nearest_rank, write_report

CLIENTS = (1, 10, 50)
COLLECTION = "bench_recall_load"
READY_TIMEOUT_S = 300.0
# The targets per level, as `summarize` counts them: fifty closed-loop clients cannot see a
# p95 under 100 ms below 500 req/s (their mean latency is clients over throughput), so the
# 50-client target is read at 200 req/s offered from 50 clients, answered at this share of it
# or more (an open load counted over a bounded window answers slightly under what it offers).
P95_TARGETS_MS = {"1_clients": 50.0, "200_rps_offered": 100.0}
KEEPS_UP = 0.97


def targets_text() -> dict[str, str]:
    """The targets as the JSON's setup states them: the ones `summarize` counts."""
    return {
        level: f"p95 < {ms:g} ms"
        + (f", answered at >= {KEEPS_UP:.0%} of it" if level.endswith("_offered") else "")
        for level, ms in P95_TARGETS_MS.items()
    }


async def build_tree(settings: Settings, memories: int, background_users: int) -> int:
    """Write the synthetic trees; returns the measured user's points."""
    async with connect(settings, producer=False) as container:
        for u in range(background_users):
            await write_nodes(container, list(tree_nodes(f"bench-other-{u}", 0, BACKGROUND_L1)))
        await write_nodes(container, list(tree_nodes(USER, 0, memories)))
        return await container.index.count(USER)


def _stat(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after "pid (comm)"; empty once the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def cpu_seconds(pids: Sequence[int]) -> tuple[float, float]:
    """CPU seconds so far (user + system) of the processes `pids` and, separately, of all
    their descendants (the model processes). Linux only: zeros without /proc."""
    if not Path("/proc/self/stat").exists():
        return 0.0, 0.0
    parents: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))):
            # proc(5) fields 4 (ppid), 14 (utime), 15 (stime); here counted from field 3.
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
            ticks[int(entry.name)] = int(fields[11]) + int(fields[12])
    own = sum(ticks.get(pid, 0) for pid in pids)
    descendants = 0
    pending = [c for pid in pids for c in parents.get(pid, [])]
    while pending:
        child = pending.pop()
        descendants += ticks.get(child, 0)
        pending += parents.get(child, [])
    per_second = os.sysconf("SC_CLK_TCK")
    return own / per_second, descendants / per_second


def _server_command(profile_to: Path | None) -> list[str]:
    run_app = "from memstream.entrypoints.cli import app; app()"
    if profile_to is None:
        return [sys.executable, "-c", run_app]
    # The profile is written at exit: `serve` stops gracefully on SIGTERM. It counts the
    # main thread's CPU time (the event loop's), not wall time, which a loaded machine
    # inflates wherever the process happened to be preempted.
    profiled = (
        "import atexit, cProfile, time; profile = cProfile.Profile(time.thread_time); "
        f"atexit.register(profile.dump_stats, {str(profile_to)!r}); profile.enable(); {run_app}"
    )
    return [sys.executable, "-c", profiled]


class Servers:
    """`workers` API processes (`memstream serve`) on one port; each on its own data copy."""

    def __init__(
        self,
        settings: Settings,
        scratch: Path,
        *,
        workers: int,
        runtime: str,
        threads: int,
        code: Path | None,
        shared_model: bool = False,
        profile_prefix: Path | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._processes: list[subprocess.Popen[bytes]] = []
        self._model_server: subprocess.Popen[bytes] | None = None
        self._cleanup = contextlib.ExitStack()  # the model server's socket directory, if any
        self.ready_s = 0.0
        started = time.perf_counter()
        # As `serve` starts its workers: they open the port together, once all are warm.
        start_dir = start_directory(settings.model_copy(update={"data_dir": scratch}), workers)
        shared: dict[str, str] = {}
        # As `serve` does (MEMSTREAM_API_SHARED_MODEL): one model server for its workers; not
        # for one worker, nor for code from before the model server.
        has_server = code is None or (code / _MODEL_SERVER_MODULE).exists()
        if shared_model and workers > 1 and has_server:
            self._model_server, socket_path = self._start_model_server(
                scratch, runtime, threads, self._cleanup
            )
            shared["MEMSTREAM_EMBED_SERVER"] = str(socket_path)
        for n in range(workers):
            data = scratch / f"worker-{n}"
            shutil.copytree(qdrant_edge_dir(settings), data / "qdrant-edge")
            env = {
                **os.environ,
                "MEMSTREAM_KAFKA_BOOTSTRAP": settings.broker.bootstrap,
                "MEMSTREAM_REDIS_URL": settings.redis.url,
                "MEMSTREAM_QDRANT_URL": "",
                "MEMSTREAM_QDRANT_COLLECTION": COLLECTION,
                "MEMSTREAM_DATA_DIR": str(data),
                "MEMSTREAM_MODEL_CACHE_DIR": str(scratch / "models"),
                "MEMSTREAM_API_HOST": "127.0.0.1",
                "MEMSTREAM_API_PORT": str(self.port),
                "MEMSTREAM_API_WORKERS": "1",
                "MEMSTREAM_API_REUSE_PORT": "true" if workers > 1 else "false",
                "MEMSTREAM_API_START_TOGETHER": str(start_dir),
                "MEMSTREAM_RECALL_AUTH_DISABLED": "true",
                "MEMSTREAM_EMBED_THREADS": str(threads),
                "MEMSTREAM_LOG_LEVEL": "WARNING",
                **shared,
            }
            if runtime:
                env["MEMSTREAM_EMBED_RUNTIME"] = runtime
            if code is not None:
                env["PYTHONPATH"] = str(code / "services")
            profile_to = None if profile_prefix is None else Path(f"{profile_prefix}-{n}.prof")
            command = _server_command(profile_to)
            self._processes.append(subprocess.Popen([*command, "serve"], env=env))
        self._started = started

    @staticmethod
    def _start_model_server(
        scratch: Path, runtime: str, threads: int, cleanup: contextlib.ExitStack
    ) -> tuple[subprocess.Popen[bytes], Path]:
        settings = Settings(
            data_dir=scratch,
            model_cache_dir=scratch / "models",
            embed_threads=threads,
            log_level="WARNING",
        )
        if runtime:
            settings = settings.model_copy(update={"embed_runtime": runtime})
        command, socket_path = model_server_command(settings, cleanup)
        return subprocess.Popen(command), socket_path

    def memory_mb(self) -> dict[str, int]:
        """Proportional set size (shared pages split between their users, as a container
        counts them) of the API processes and of the model's processes, in MB."""
        api = [psutil.Process(p.pid) for p in self._processes]
        model = [c for p in api for c in p.children(recursive=True)]
        if self._model_server is not None:
            model.append(psutil.Process(self._model_server.pid))
        return {"api": _pss_mb(api), "model": _pss_mb(model)}

    def cpu_seconds(self) -> tuple[float, float]:
        """CPU seconds so far of the API processes, and of their model processes (the
        shared model server's, when there is one)."""
        api, model = cpu_seconds([p.pid for p in self._processes])
        if self._model_server is not None:
            model += sum(cpu_seconds([self._model_server.pid]))
        return api, model

    async def wait_ready(self, session: aiohttp.ClientSession) -> None:
        """Until every worker answers /readyz. The workers open the port together, once all
        are warm (`MEMSTREAM_API_START_TOGETHER`), so the first ready answer says so; the
        answers in a row (as many as there are workers, twice over) are for a server of
        older code that opened the port as each worker warmed up."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        in_a_row = 0
        while in_a_row < 2 * len(self._processes):
            if any(p.poll() is not None for p in self._processes):
                raise RuntimeError("an API process exited during startup")
            if time.monotonic() > deadline:
                raise TimeoutError("the API did not become ready")
            try:
                async with session.get(self.url + "/readyz") as reply:
                    in_a_row = in_a_row + 1 if reply.status == 200 else 0
            except aiohttp.ClientError:
                in_a_row = 0
                await asyncio.sleep(0.05)
        self.ready_s = round(time.perf_counter() - self._started, 2)

    def stop(self) -> None:
        for process in self._processes:
            process.terminate()
        for process in self._processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._model_server is not None:
            self._model_server.terminate()
            self._model_server.wait(timeout=30)
        self._cleanup.close()


async def load(
    servers: Servers,
    asks: Sequence[str],
    clients: int,
    total: int,
    rate: float | None = None,
) -> dict[str, Any]:
    """`clients` concurrent request loops sharing `total` requests: each asks again as soon
    as it is answered or, with `rate`, at the next of a fixed schedule of `rate` requests a
    second (open loop; a request's latency counts from its scheduled time, so time spent
    waiting for a free client is not hidden)."""
    # The load generator shares the cores with the API: bodies are encoded once, up front.
    bodies = [json.dumps({"user_id": USER, "query": ask}).encode() for ask in asks]
    latencies: list[float] = []
    stages: dict[str, list[float]] = {}
    errors = 0
    next_ask = 0
    start = 0.0  # set just before the clients start

    async def client() -> None:
        nonlocal next_ask, errors
        connection = KeepAliveConnection("127.0.0.1", servers.port)
        try:
            await asking(connection)
        finally:
            await connection.close()

    async def asking(connection: KeepAliveConnection) -> None:
        nonlocal next_ask, errors
        while next_ask < total:
            query = bodies[next_ask % len(bodies)]
            began = time.perf_counter()
            if rate is not None:
                began = start + next_ask / rate
                next_ask += 1
                await asyncio.sleep(max(0.0, began - time.perf_counter()))
            else:
                next_ask += 1
            try:
                status, answer = await connection.post("/v1/recall", query)
                body = json.loads(answer) if status == 200 else None
            except ConnectionError:
                body = None
            latencies.append(ms_since(began))
            if body is None:
                errors += 1
                continue
            for stage, ms in body["timings_ms"].items():
                stages.setdefault(stage, []).append(ms)

    cpu_before = servers.cpu_seconds(), cpu_seconds([os.getpid()])
    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.perf_counter() - start
    cpu_after = servers.cpu_seconds(), cpu_seconds([os.getpid()])
    api_cpu, model_cpu = (b - a for b, a in zip(cpu_after[0], cpu_before[0], strict=True))
    # This process and its descendants, the servers' processes aside: the load generator,
    # Redis and the broker, which share the machine's cores with the API.
    rest_cpu = sum(cpu_after[1]) - sum(cpu_before[1]) - api_cpu - model_cpu
    answered = max(1, len(latencies))
    return {
        "clients": clients,
        **({"offered_rps": rate} if rate is not None else {}),
        "requests": len(latencies),
        "errors": errors,
        "throughput_rps": round(len(latencies) / elapsed, 1),
        "p50_ms": round(nearest_rank(latencies, 50), 1),
        "p95_ms": round(nearest_rank(latencies, 95), 1),
        "p99_ms": round(nearest_rank(latencies, 99), 1),
        "mean_ms": round(statistics.fmean(latencies), 1),
        "api_cpu_ms_per_request": round(api_cpu * 1000 / answered, 2),
        "model_cpu_ms_per_request": round(model_cpu * 1000 / answered, 2),
        "bench_cpu_ms_per_request": round(rest_cpu * 1000 / answered, 2),
        "server_stage_p50_ms": {
            s: round(nearest_rank(v, 50), 2) for s, v in sorted(stages.items())
        },
        "server_stage_p95_ms": {
            s: round(nearest_rank(v, 95), 2) for s, v in sorted(stages.items())
        },
    }


async def measure(
    servers: Servers,
    levels: Sequence[int],
    requests: int,
    warm_up: int,
    rates: Sequence[float] = (),
) -> dict[str, Any]:
    asks = queries(max(requests, 200))
    connector = aiohttp.TCPConnector(limit=max(levels), force_close=False)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        await servers.wait_ready(session)
        results: dict[str, Any] = {"time_to_ready_s": servers.ready_s}
        for clients in levels:
            await load(servers, asks, clients, warm_up)
            total = requests if clients > 1 else max(30, requests // 4)
            results[f"{clients}_clients"] = figures = await load(servers, asks, clients, total)
            print(f"  {json.dumps(figures)}", flush=True)
        for rate in rates:
            # As many clients as the highest level, asking on a schedule instead of at once.
            results[f"{rate:g}_rps_offered"] = figures = await load(
                servers, asks, max(levels), requests, rate=rate
            )
            print(f"  {json.dumps(figures)}", flush=True)
    results["memory_mb"] = servers.memory_mb()
    return results


_MODEL_SERVER_MODULE = Path("services/memstream/adapters/embedding/model_server.py")


def _pss_mb(processes: Sequence[psutil.Process]) -> int:
    return round(sum(pss_mb(p) or 0.0 for p in processes))


def run(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"configurations": {}, "setup": {}}
    with tempfile.TemporaryDirectory(prefix="memstream-bench-") as tmp:
        scratch = Path(tmp)
        base = Settings(
            data_dir=scratch / "stack",
            kafka_bootstrap="",
            redis_url="",
            qdrant_url="",
            qdrant_collection=COLLECTION,
            embedder="hashing",  # only to size the index; stored vectors are synthetic anyway
            log_level="WARNING",
        )
        with BackgroundStack(base) as stack:
            served = stack.settings()
            began = time.perf_counter()
            points = asyncio.run(build_tree(served, args.memories, args.background_users))
            print(f"{points} memories of the user written ({time.perf_counter() - began:.0f} s)")
            for round_ in range(args.rounds):
                for number, config in enumerate(args.config):
                    name = config["name"]
                    print(f"round {round_ + 1}: {name}", flush=True)
                    servers = Servers(
                        served,
                        scratch / f"run-{round_}-{number}",
                        workers=config["workers"],
                        runtime=config["runtime"],
                        threads=config["threads"],
                        code=config["code"],
                        shared_model=bool(config["shared_model"]),
                        profile_prefix=(
                            None
                            if args.profile is None
                            else args.profile / f"{_slug(name)}-{round_ + 1}"
                        ),
                    )
                    try:
                        # The API's event loop (uvloop when installed) drives the clients too.
                        with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
                            figures = runner.run(
                                measure(
                                    servers,
                                    args.clients,
                                    args.requests,
                                    args.warm_up,
                                    args.rates,
                                )
                            )
                    finally:
                        servers.stop()
                    report["configurations"].setdefault(name, []).append(figures)
                    # What is measured so far survives an abort.
                    write_report(args.out, report, default=str)
        report["setup"] = {
            "user_points": points,
            "background_users": args.background_users,
            "background_l1_per_user": BACKGROUND_L1,
            "requests_per_level": args.requests,
            "store": "qdrant-edge in-process (one copy per API process), redis-server",
            "stored_dense_vectors": "hashing embedder (synthetic dense scores)",
            "planner_and_gate": "offline",
            "targets_2_cores": targets_text(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "note": "shared machines: compare configurations of the same run only",
        }
    return report


def summarize(configurations: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Each configuration's levels over its rounds: median p95 (and range), throughput and CPU
    a request in all; for a level with a target, how many rounds met it. Shared cores move a
    single round's tail by tens of milliseconds, so the median over rounds is the figure."""
    summary: dict[str, Any] = {}
    for name, rounds in configurations.items():
        levels: dict[str, Any] = {}
        for key in rounds[0]:
            if not key.endswith(("_clients", "_offered")):
                continue
            figures = [r[key] for r in rounds if key in r]
            p95 = [f["p95_ms"] for f in figures]
            line: dict[str, Any] = {
                "rounds": len(figures),
                "p95_ms_median": statistics.median(p95),
                "p95_ms_range": [min(p95), max(p95)],
                "throughput_rps_median": statistics.median(f["throughput_rps"] for f in figures),
                "cpu_ms_per_request_median": round(
                    statistics.median(
                        f["api_cpu_ms_per_request"]
                        + f["model_cpu_ms_per_request"]
                        + f["bench_cpu_ms_per_request"]
                        for f in figures
                    ),
                    2,
                ),
            }
            if key in P95_TARGETS_MS:
                line["rounds_at_target"] = sum(_meets(key, f) for f in figures)
            levels[key] = line
        summary[name] = levels
    return summary


def _meets(level: str, figures: dict[str, Any]) -> bool:
    offered = figures.get("offered_rps")
    keeps_up = offered is None or figures["throughput_rps"] >= KEEPS_UP * offered
    return bool(figures["p95_ms"] < P95_TARGETS_MS[level] and keeps_up)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_=" else "_" for c in name)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Where to write the JSON.")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--background-users", type=int, default=20)
    parser.add_argument("--clients", type=int, nargs="+", default=list(CLIENTS))
    parser.add_argument("--requests", type=int, default=1000, help="Requests per level.")
    parser.add_argument("--warm-up", type=int, default=20)
    parser.add_argument(
        "--rates",
        type=float,
        nargs="*",
        default=[],
        help="Also offer these fixed request rates (req/s, open loop) from the most clients.",
    )
    parser.add_argument(
        "--config",
        type=parse_config,
        nargs="+",
        default=[parse_config("")],
        help="Server configurations, e.g. workers=2 runtime=onnx-int8 code=/tmp/main.",
    )
    parser.add_argument("--rounds", type=int, default=1, help="Alternate the configs N times.")
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="Run the API processes under cProfile; write their profiles to this directory.",
    )
    args = parser.parse_args(argv)
    # The load generator's own collector, tuned as the API's is (it shares the cores).
    collect_less_often()
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    report = run(args)
    report["summary"] = summarize(report["configurations"])
    write_report(args.out, report, default=str)
    for name, rounds in report["configurations"].items():
        for figures in rounds:
            levels = [f for k, f in figures.items() if k.endswith(("_clients", "_offered"))]
            summary = "  ".join(
                f"{f['clients']}c{' at ' + str(f['offered_rps']) if 'offered_rps' in f else ''}"
                f" {f['throughput_rps']} req/s p95 {f['p95_ms']} ms "
                f"cpu {f['api_cpu_ms_per_request']} ms/req"
                for f in levels
            )
            print(f"{name}: ready {figures['time_to_ready_s']} s  {summary}")
    for name, levels in report["summary"].items():
        met = "  ".join(
            f"{level}: p95 median {line['p95_ms_median']} ms, "
            f"{line['rounds_at_target']} of {line['rounds']} at target"
            for level, line in levels.items()
            if "rounds_at_target" in line
        )
        print(f"{name}: {met}")


if __name__ == "__main__":
    main()
