"""How the costs grow with the data: recall, the segmenter's step, the lifecycle, the bytes.

    memstream bench scale --run-dir bench-results/scale-run --out bench-results/scale.json

One run, on the embedded stack (redis-server, qdrant-edge in-process on disk, Tansu), fills
the stores step by step and measures at each step. What it builds (`scale_fill`,
`scale_chat`): first light users (`--light-messages` each over a month; about 100 memories
each by default, so 10k, 100k and 1M memories are 100, 1,000 and 10,000 users) until the
store holds each of `--sizes` memories (1,000,000 added by `--largest`); then one heavy user
(`--heavy-messages` over `--heavy-years`) and a medium one (a tenth of that). Chats are drawn
from LoCoMo's statistics; dense vectors are resampled real embeddings (`--vectors
resampled`) or the model's own (`--vectors real`, slow). Before anything, a sample user is
written both by the real segmenter and by the fill, and their keys and payload fields
compared (`scale_kind`).

At each size: recall over HTTP (the API in-process, offline planner) at one client for a
light user (`recall_probe`) and at `--rate` requests a second offered over the sampled light
users (`scale_load`, a process of its own); bytes in Redis by key family (`MEMORY USAGE`)
for a sample of light users, the whole Redis's `used_memory`, the Qdrant directory on disk
and the process's RSS. Along the heavy user's fill, its key families at every tenth of its
messages (what grows with history). With the heavy user in: its recall against a light
user's in the same store, and its bytes. Then the probes: one segmenter step's CPU per
message for a fresh, the medium and the heavy user (`scale_probe`), the window state, the
knowledge derivation, the consolidator on the heavy user's latest day, week and month, a
rebuild of the heavy user's whole tree, and forgetting it (`scale_lifecycle`).

Resumable: `--run-dir` keeps the stores (the embedded Redis's append-only file, Qdrant's
directory) and `progress.json` (what is built, what is measured); running again skips
every measurement already made and goes on filling where it stopped (a user cut short is
written again whole: the same seed writes the same ids). `--out` gets the JSON of everything
measured so far.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx
import redis.asyncio as aioredis
from rich.progress import Progress

from memstream.bootstrap import Container, recall_app
from memstream.edges.http.server import BackgroundServer
from memstream.entrypoints.embedded.background import BackgroundStack
from memstream.wiring.handlers import derivation, window_rules
from memstream_lab.bench import scale_bytes as sb
from memstream_lab.bench import scale_load
from memstream_lab.bench.recall_probe import WARM_UP
from memstream_lab.bench.recall_probe import measure as recall_measure
from memstream_lab.bench.scale_chat import ChatShape, locomo_shape, user_chat
from memstream_lab.bench.scale_fill import EmbeddedVectors, Filled, Filler, ResampledVectors
from memstream_lab.bench.scale_kind import check_kind
from memstream_lab.bench.scale_plot import plot_latency
from memstream_lab.bench.scale_run import Run, as_async, progress_bar, stack_settings, vector_bank
from memstream_lab.bench.scale_steps import HEAVY, LIGHT0, MEDIUM, run_probes
from memstream_lab.bench.synthetic import queries
from memstream_lab.measure import write_report

T = TypeVar("T")
SIZES = (10_000, 100_000)
LARGEST = 1_000_000
LIGHT_SAMPLE = 20  # light users whose keys are measured, and whom the offered load asks for


def run(args: argparse.Namespace) -> dict[str, Any]:
    run_dir = Run(args.run_dir)
    shape: ChatShape = locomo_shape()
    run_dir.doc["chat"] = shape.summary()
    settings = stack_settings(args.run_dir, "bench_scale")
    sizes = sorted({*args.sizes, *([LARGEST] if args.largest else [])})
    if args.only_segmenter:
        sizes = []
    with BackgroundStack(settings) as stack:
        served = stack.settings()
        with (
            BackgroundServer(recall_app(served)) as server,
            httpx.Client(base_url=server.url, timeout=120) as http,
        ):
            c: Container = server.app.state.container

            def call(work: Callable[[], Awaitable[T]]) -> T:
                return server.call(work, timeout_s=24 * 3600)

            ns = served.redis.namespace
            client = call(as_async(lambda: aioredis.Redis.from_url(served.redis.url)))
            filler = Filler(
                client=client,
                namespace=ns,
                index=c.index,
                vectors=EmbeddedVectors(c.embedder)
                if args.vectors == "real"
                else ResampledVectors(vector_bank(run_dir, c, call)),
                rules=window_rules(c.settings),
                derivation=derivation(c.settings),
            )
            built: dict[str, Any] = run_dir.doc["built"]
            if built.get("light_users") and not call(
                functools.partial(client.exists, f"{ns}:{{{LIGHT0}}}:state")
            ):
                built.clear()  # the stores did not survive: fill again (same seeds)
            if not run_dir.done("kind_check") and not args.only_segmenter:
                run_dir.keep("kind_check", call(lambda: check_kind(c, client, ns, filler, shape)))
            measured = run_dir.doc.setdefault("sizes", {})
            asks = queries(args.queries + 3)
            with progress_bar() as bar:
                task = bar.add_task("light users' memories", total=sizes[-1] if sizes else 0)
                for size in sizes:
                    fill_to = functools.partial(bar.update, task)
                    _fill_light(args, run_dir, call, filler, shape, size, fill_to)
                    if str(size) in measured:
                        continue
                    light = _light_sample(built)
                    redis = call(functools.partial(sb.redis_figures, client, ns, light))
                    measured[str(size)] = {
                        "memories": built["memories"],
                        "light_users": built["light_users"],
                        "recall_light": _recall(http, asks, args.seconds, LIGHT0),
                        "recall_offered": scale_load.measure(
                            server.url, light, args.rate, args.rate_seconds
                        ),
                        "redis": redis,
                        **sb.per_memory(redis, light),
                        **_qdrant_figures(args, call, c, light),
                    }
                    run_dir.save()
                _fill_heavy(args, run_dir, call, client, ns, filler, shape, bar)
            if not run_dir.done("with_heavy") and not args.only_segmenter:
                light = _light_sample(built)
                redis = call(functools.partial(sb.redis_figures, client, ns, [HEAVY, *light]))
                run_dir.keep(
                    "with_heavy",
                    {
                        "memories": built["memories"],
                        "recall_heavy": _recall(http, asks, args.seconds, HEAVY),
                        "recall_light": _recall(http, asks, args.seconds, LIGHT0),
                        "redis": redis,
                        **_qdrant_figures(args, call, c, [HEAVY, *light]),
                    },
                )
            run_probes(run_dir, call, c, built, args.rebuild_seconds, args.only_segmenter)
            call(client.aclose)
    return run_dir.doc


def _recall(http: httpx.Client, asks: Sequence[str], seconds: float, user: str) -> dict[str, Any]:
    """One client's recall latency, and this process's CPU a request (the API, the embedded
    Qdrant and the client all run in it): the CPU holds still when other work on the shared
    cores stretches the wall-clock figures."""
    began = time.process_time()
    figures = recall_measure(http, asks, seconds, user)
    spent = time.process_time() - began
    warmed = figures["requests"] + WARM_UP
    return {**figures, "process_cpu_ms_per_request": round(1000 * spent / warmed, 2)}


def _light_sample(built: dict[str, Any]) -> list[str]:
    return [f"light-{i}" for i in range(min(LIGHT_SAMPLE, built["light_users"]))]


def _qdrant_figures(
    args: argparse.Namespace, call: Callable[..., Any], c: Container, users: Sequence[str]
) -> dict[str, Any]:
    qdir = sb.qdrant_dir(args.run_dir / "stores")
    return {
        "qdrant_disk_bytes": sb.disk_bytes(qdir) if qdir else None,
        "qdrant_points": call(functools.partial(_points, c, users)),
        "process_rss_bytes": sb.rss_bytes(),
    }


def _fill_light(
    args: argparse.Namespace,
    run_dir: Run,
    call: Callable[..., Any],
    filler: Filler,
    shape: ChatShape,
    size: int,
    advance: Callable[..., Any],
) -> None:
    built = run_dir.doc["built"]
    while built.get("memories", 0) < size:
        user = f"light-{built.get('light_users', 0)}"
        chat = user_chat(user, shape, args.light_messages, span_days=30)
        began, cpu = time.perf_counter(), time.process_time()
        got: Filled = call(functools.partial(filler.fill_user, user, chat))
        built["light_fill_s"] = built.get("light_fill_s", 0.0) + time.perf_counter() - began
        built["light_fill_cpu_s"] = built.get("light_fill_cpu_s", 0.0) + time.process_time() - cpu
        built["light_users"] = built.get("light_users", 0) + 1
        built["memories"] = built.get("memories", 0) + got.l1 + got.summaries
        advance(completed=built["memories"])
        if built["light_users"] % 50 == 0:
            run_dir.save()
    run_dir.save()


def _fill_heavy(
    args: argparse.Namespace,
    run_dir: Run,
    call: Callable[..., Any],
    client: Any,
    ns: str,
    filler: Filler,
    shape: ChatShape,
    bar: Progress,
) -> None:
    built = run_dir.doc["built"]
    span = 365.25 * args.heavy_years
    for user, messages in ((HEAVY, args.heavy_messages), (MEDIUM, args.heavy_messages // 10)):
        if user in built:
            continue
        checkpoints: list[dict[str, Any]] = []
        fill = _user_fill(user, messages, checkpoints, client, ns, filler, bar)
        began, cpu = time.perf_counter(), time.process_time()
        got: Filled = call(functools.partial(fill, user_chat(user, shape, messages, span)))
        built[user] = {
            "fill_s": round(time.perf_counter() - began, 1),
            "fill_cpu_s": round(time.process_time() - cpu, 1),
            "messages": got.messages,
            "l1": got.l1,
            "summaries": got.summaries,
            "last_ts": got.last_ts,
        }
        built["memories"] = built.get("memories", 0) + got.l1 + got.summaries
        if user == HEAVY:
            run_dir.doc["heavy_growth"] = {
                "checkpoints": checkpoints,
                "by_family": sb.growth(checkpoints),
            }
        run_dir.save()


def _user_fill(
    user: str,
    messages: int,
    checkpoints: list[dict[str, Any]],
    client: Any,
    ns: str,
    filler: Filler,
    bar: Progress,
) -> Callable[[Iterable[dict[str, Any]]], Awaitable[Filled]]:
    """Fills the user's chat, its key families recorded at every tenth of its messages."""
    task = bar.add_task(user, total=messages)

    async def checkpoint(filled: Filled) -> None:
        bar.update(task, completed=filled.messages)
        families = await sb.user_families(client, ns, user)
        checkpoints.append({"messages": filled.messages, "bytes": dict(families)})

    async def fill(chat: Iterable[dict[str, Any]]) -> Filled:
        got = await filler.fill_user(user, chat, checkpoint, max(64, messages // 10))
        bar.update(task, completed=messages)
        return got

    return fill


async def _points(c: Container, users: Sequence[str]) -> dict[str, int]:
    return {u: await c.index.count(u) for u in users}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Where to write the JSON.")
    parser.add_argument("--run-dir", type=Path, default=Path("bench-results/scale-run"))
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--largest", action="store_true", help="Add the 1,000,000 step.")
    parser.add_argument("--heavy-messages", type=int, default=100_000)
    parser.add_argument("--heavy-years", type=float, default=5.0)
    parser.add_argument("--light-messages", type=int, default=85)
    parser.add_argument("--vectors", choices=("resampled", "real"), default="resampled")
    parser.add_argument("--queries", type=int, default=100, help="Recall requests per user.")
    parser.add_argument("--seconds", type=float, default=20.0, help="Recall time per user.")
    parser.add_argument("--rate", type=float, default=200.0, help="Recalls offered a second.")
    parser.add_argument("--rate-seconds", type=float, default=10.0, help="Offered load's time.")
    parser.add_argument(
        "--rebuild-seconds",
        type=float,
        default=0.0,
        help="Stop the heavy user's rebuild after this long and extrapolate (0: run it whole).",
    )
    parser.add_argument("--plot", type=Path, help="Where to draw recall latency against size.")
    parser.add_argument(
        "--only-segmenter",
        action="store_true",
        help="Fill the heavy and medium users only, and measure only the segmenter's step.",
    )
    args = parser.parse_args(argv)
    _check(parser, args)
    report = run(args)
    report["setup"] = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "store": "embedded: redis-server, qdrant-edge in-process on disk, Tansu",
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    write_report(args.out, report, default=str)
    if args.plot is not None:
        plot_latency(report, args.plot)
    for size, fig in report.get("sizes", {}).items():
        one, rate = fig["recall_light"], fig["recall_offered"]
        print(
            f"{size:>8} memories: recall p95 {one['p95_ms']} ms at 1 client, "
            f"{rate['p95_ms']} ms at {rate['offered_rps']:g} req/s offered; "
            f"{fig['redis_bytes_per_memory']} Redis bytes/memory"
        )


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Bad arguments answered before anything starts."""
    if any(size <= 0 for size in args.sizes):
        parser.error("--sizes must be positive numbers of memories")
    if args.heavy_messages < 10 or args.light_messages < 2:
        parser.error("--heavy-messages must be at least 10 and --light-messages at least 2")
    if args.heavy_years <= 0 or args.rate <= 0 or args.rate_seconds <= 0 or args.seconds <= 0:
        parser.error("--heavy-years, --rate, --rate-seconds and --seconds must be positive")


if __name__ == "__main__":
    main()
