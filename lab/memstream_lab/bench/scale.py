"""How the costs grow with the data: recall, the segmenter's step and the stores' bytes.

    memstream bench scale --run-dir bench-results/scale-run --out bench-results/scale.json

One run, on the embedded stack (redis-server, qdrant-edge in-process on disk, Tansu), fills
the stores step by step (`--sizes`, memories in all; 1,000,000 only with `--largest`) and
measures at each step. What it builds (`scale_fill`, `scale_chat`): one heavy user
(`--heavy-messages` over `--heavy-years`) and a medium one (a tenth of that), written
first; then light users (`--light-messages` each over a month) until the store holds the
step's memories. Chats are drawn from LoCoMo's statistics; dense vectors are resampled real
embeddings (`--vectors resampled`) or the model's own (`--vectors real`, slow). Before
anything, a sample user is written both by the real segmenter and by the fill, and their keys
and payload fields compared (`scale_kind`).

At each size: recall p50/p95 over HTTP at one client for the heavy user and a light one
(`recall_probe.measure`: the API in-process, offline planner); bytes in Redis by key family
(`MEMORY USAGE`) for the heavy user and a sample of light users, the whole Redis's
`used_memory`, the Qdrant directory on disk and the process's RSS. Along the heavy user's
fill, its key families at every tenth of its messages (what grows with history). After the
last size: one segmenter step's CPU per message for a fresh, the medium and the heavy user
(`scale_probe`), then the time to forget the heavy user.

Resumable: `--run-dir` keeps the stores and `progress.json` (what is built, what is
measured); running again skips every measurement already made. What the stores lost is
written again first (the embedded Redis keeps nothing across runs; the same seeds write the
same users, ids and all). `--out` gets the JSON of everything measured so far.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import platform
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx
import redis.asyncio as aioredis
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memstream.bootstrap import Container, recall_app
from memstream.edges.http.server import BackgroundServer
from memstream.entrypoints.embedded.background import BackgroundStack
from memstream.settings import Settings
from memstream.wiring.handlers import derivation, window_rules
from memstream_lab.bench import scale_bytes as sb
from memstream_lab.bench.recall_probe import measure as recall_measure
from memstream_lab.bench.scale_chat import ChatShape, locomo_shape, user_chat
from memstream_lab.bench.scale_fill import (
    BANK_SIZE,
    EmbeddedVectors,
    Filled,
    Filler,
    ResampledVectors,
    Vectors,
)
from memstream_lab.bench.scale_kind import check_kind
from memstream_lab.bench.scale_plot import plot_latency
from memstream_lab.bench.scale_probe import (
    forget_time,
    knowledge_derive,
    saturated_state,
    segmenter_cpu,
    state_cost,
    user_state_cost,
)
from memstream_lab.bench.synthetic import queries
from memstream_lab.locomo import conversation_files, load_conversation, message_text
from memstream_lab.measure import write_report

T = TypeVar("T")
SIZES = (10_000, 100_000)
LARGEST = 1_000_000
HEAVY, MEDIUM, FRESH = "heavy-user", "medium-user", "fresh-user"
LIGHT0 = "light-0"
LIGHT_SAMPLE = 20  # light users whose keys are measured at each size


class Run:
    """The run directory: the stores and what is built and measured (`progress.json`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = path / "progress.json"
        self.doc: dict[str, Any] = (
            json.loads(self.file.read_text()) if self.file.exists() else {"built": {}}
        )

    def save(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        self.file.write_text(json.dumps(self.doc, indent=2, default=str) + "\n")

    def done(self, name: str) -> bool:
        return name in self.doc

    def keep(self, name: str, value: Any) -> Any:
        self.doc[name] = value
        self.save()
        return value


def _bank(run: Run, c: Container, call: Callable[..., Any]) -> list[list[float]]:
    """Real embeddings of LoCoMo messages, made once per run directory."""
    path = run.path / "vector-bank.json"
    if path.exists():
        return list(json.loads(path.read_text()))
    texts = [
        message_text(m)
        for f in conversation_files()
        for s in load_conversation(f).sessions
        for m in s.messages
    ][:: max(1, 2760 // BANK_SIZE)][:BANK_SIZE]
    bank = call(functools.partial(c.embedder.embed, texts))
    path.write_text(json.dumps(bank))
    return list(bank)


def run(args: argparse.Namespace) -> dict[str, Any]:
    run_dir = Run(args.run_dir)
    shape: ChatShape = locomo_shape()
    run_dir.doc["chat"] = shape.summary()
    settings = Settings(
        data_dir=args.run_dir / "stores",
        kafka_bootstrap="",
        redis_url="",
        qdrant_url="",
        qdrant_collection="bench_scale",
        log_level="WARNING",
        embed_threads=1,
        embed_processes=1,
    )
    sizes = sorted({*args.sizes, *([LARGEST] if args.largest else [])})
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
            client = call(_async(lambda: aioredis.Redis.from_url(served.redis.url)))
            vectors: Vectors = (
                EmbeddedVectors(c.embedder)
                if args.vectors == "real"
                else ResampledVectors(_bank(run_dir, c, call))
            )
            filler = Filler(
                client=client,
                namespace=ns,
                index=c.index,
                vectors=vectors,
                rules=window_rules(c.settings),
                derivation=derivation(c.settings),
            )
            built: dict[str, Any] = run_dir.doc["built"]
            if built and not call(functools.partial(client.exists, f"{ns}:{{{HEAVY}}}:state")):
                built.clear()  # the stores did not survive: fill again (same seeds)
            if not run_dir.done("kind_check"):
                run_dir.keep("kind_check", call(lambda: check_kind(c, client, ns, filler, shape)))
            with _progress() as bar:
                _fill_heavy(args, run_dir, call, client, ns, filler, shape, bar)
                measured = run_dir.doc.setdefault("sizes", {})
                asks = queries(args.queries + 3)
                task = bar.add_task("light users", total=sizes[-1])
                for size in sizes:
                    while built.get("memories", 0) < size:
                        user = f"light-{built.get('light_users', 0)}"
                        chat = user_chat(user, shape, args.light_messages, span_days=30)
                        got: Filled = call(functools.partial(filler.fill_user, user, chat))
                        built["light_users"] = built.get("light_users", 0) + 1
                        built["memories"] = built.get("memories", 0) + got.l1 + got.summaries
                        bar.update(task, completed=min(built["memories"], sizes[-1]))
                        if built["light_users"] % 50 == 0:
                            run_dir.save()
                    run_dir.save()
                    if str(size) in measured:
                        continue
                    light = [f"light-{i}" for i in range(min(LIGHT_SAMPLE, built["light_users"]))]
                    redis = call(functools.partial(sb.redis_figures, client, ns, [HEAVY, *light]))
                    qdir = sb.qdrant_dir(args.run_dir / "stores")
                    measured[str(size)] = {
                        "memories": built["memories"],
                        "light_users": built["light_users"],
                        "recall_heavy": recall_measure(http, asks, args.seconds, HEAVY),
                        "recall_light": recall_measure(http, asks, args.seconds, light[0]),
                        "redis": redis,
                        **sb.per_memory(redis, light),
                        "qdrant_disk_bytes": sb.disk_bytes(qdir) if qdir else None,
                        "qdrant_points": call(functools.partial(_points, c, [HEAVY, *light])),
                        "process_rss_bytes": sb.rss_bytes(),
                    }
                    run_dir.save()
                _probes(run_dir, call, c, built)
            call(client.aclose)
    return run_dir.doc


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
        got: Filled = call(functools.partial(fill, user_chat(user, shape, messages, span)))
        built[user] = {
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


def _probes(run_dir: Run, call: Callable[..., Any], c: Container, built: dict[str, Any]) -> None:
    from datetime import datetime

    if not run_dir.done("segmenter_step"):
        last = datetime.fromisoformat(str(built[HEAVY]["last_ts"]))
        run_dir.keep(
            "segmenter_step",
            {
                f"{user} ({history} messages)": call(lambda u=user, at=at: segmenter_cpu(c, u, at))
                for user, history, at in (
                    (FRESH, 0, last),
                    (MEDIUM, built[MEDIUM]["messages"], last),
                    (HEAVY, built[HEAVY]["messages"], last),
                )
            },
        )
    if not run_dir.done("window_state"):
        run_dir.keep(
            "window_state",
            {
                "at_bound": state_cost(saturated_state()),
                **{u: call(functools.partial(user_state_cost, c, u)) for u in (HEAVY, LIGHT0)},
            },
        )
    if not run_dir.done("knowledge_derive"):
        run_dir.keep(
            "knowledge_derive",
            {u: call(functools.partial(knowledge_derive, c, u)) for u in (HEAVY, LIGHT0)},
        )
    if not run_dir.done("forget_heavy"):
        run_dir.keep("forget_heavy", call(lambda: forget_time(c, HEAVY)))


async def _points(c: Container, users: Sequence[str]) -> dict[str, int]:
    return {u: await c.index.count(u) for u in users}


def _async(work: Callable[[], T]) -> Callable[[], Awaitable[T]]:
    async def wrapped() -> T:
        result = work()
        return await result if asyncio.iscoroutine(result) else result

    return wrapped


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Where to write the JSON.")
    parser.add_argument("--run-dir", type=Path, default=Path("bench-results/scale-run"))
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--largest", action="store_true", help="Add the 1,000,000 step.")
    parser.add_argument("--heavy-messages", type=int, default=100_000)
    parser.add_argument("--heavy-years", type=float, default=5.0)
    parser.add_argument("--light-messages", type=int, default=40)
    parser.add_argument("--vectors", choices=("resampled", "real"), default="resampled")
    parser.add_argument("--queries", type=int, default=100, help="Recall requests per user.")
    parser.add_argument("--seconds", type=float, default=20.0, help="Recall time per user.")
    parser.add_argument("--plot", type=Path, help="Where to draw recall latency against size.")
    args = parser.parse_args(argv)
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
        heavy, light = fig["recall_heavy"], fig["recall_light"]
        print(
            f"{size:>8} memories: recall p95 heavy {heavy['p95_ms']} ms, light "
            f"{light['p95_ms']} ms; {fig['redis_bytes_per_memory']} Redis bytes/memory"
        )


if __name__ == "__main__":
    main()
