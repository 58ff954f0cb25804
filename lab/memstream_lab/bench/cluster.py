"""Redis Cluster against a single primary: ingest rate and recall p95, in one run.

    memstream bench cluster --conversations 1 --rounds 3 --out bench-results/cluster.json

One embedded stack (broker, the single primary, Qdrant's in-process engine) and a real
three-primary Redis Cluster started beside it (`memstream_lab.redis_cluster`). Each round
runs the write path once per layout, in turn (which goes first alternates by round): the
same LoCoMo conversations, each run with topics, consumer group, Redis namespace and
collection of its own. Ingest is timed from the first publish until every message is in a
stored L1 (the segmenter's count), as in `bench ingest`, with the segmenter and the
consolidator running. The clock is started only after that, to close the last windows: a
deployment ticks once a minute, the benchmark would tick every half second, and on the
cluster each tick reads every slot's due-users key, which would bill the cluster for a
hundred times the reads it makes in production. What one such read costs on each layout is
reported beside (`due_users_read_ms`). Recall is then timed in the process (the pipeline the
API runs, no HTTP) over the conversations' questions, once everything is consolidated,
asking each question of both layouts in turn, so that load from elsewhere falls on both.
The figures are the cluster's over the single primary's per round, median over the rounds:
the issue's target is within 1.2x.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memstream.adapters.kafka.admin import ensure_topics
from memstream.adapters.redis.connection import SlotTransactions, open_client
from memstream.bootstrap import Container, build_clock, build_recall, connect
from memstream.contracts.catalog import load_catalog
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.embedded.stack import EmbeddedStack
from memstream.entrypoints.runner import Part, run_parts
from memstream.recall.pipeline import RecallRequest
from memstream.settings import Settings
from memstream_lab.locomo import conversation_events, conversation_files, load_conversation
from memstream_lab.measure import ms_since, nearest_rank, write_report
from memstream_lab.redis_cluster import running_cluster

TARGET_RATIO = 1.2
LAYOUTS = ("single", "cluster")
DUE_READS = 20


def _write_events(files: list[Path], out: Path) -> tuple[list[str], int, list[tuple[str, str]]]:
    """The conversations as one JSONL; their users, message count and (user, question)s."""
    users, messages, questions = [], 0, []
    with out.open("w") as sink:
        for path in files:
            conversation = load_conversation(path)
            user = f"locomo-{path.stem}"
            for event in conversation_events(conversation):
                sink.write(json.dumps(event) + "\n")
                messages += event["type"] == "turn.v1"
            users.append(user)
            questions += [(user, qa.question) for qa in conversation.questions if qa.category != 5]
    return users, messages, questions


def _layout_settings(base: Settings, cluster_url: str | None, data_dir: Path) -> Settings:
    """`base` with topics, consumer group, namespace, collection and directory of its own;
    on the cluster with `cluster_url`."""
    uid = uuid.uuid4().hex[:10]
    update: dict[str, Any] = {
        "topic_prefix": f"bench-{uid}.",
        "consumer_group": f"bench-{uid}",
        "redis_namespace": f"bench-{uid}",
        "qdrant_collection": f"bench_{uid}",
        "data_dir": data_dir,
        "clock_interval_s": 0.5,
        "clock_grace_s": 0.0,
    }
    if cluster_url is not None:
        update |= {"redis_url": cluster_url, "redis_cluster": True}
    return base.model_copy(update=update)


async def _redis_cpu_s(settings: Settings) -> float:
    """CPU seconds the layout's Redis servers have used (user and system, every primary)."""
    client = open_client(settings.redis.url, cluster=settings.redis.cluster)
    try:
        servers = await client.primaries() if isinstance(client, SlotTransactions) else [client]
        used = 0.0
        for server in servers:
            info = await server.info("cpu")
            used += float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
        return used
    finally:
        await client.aclose()


async def _ingest(
    settings: Settings, events: Path, users: list[str], messages: int
) -> dict[str, float]:
    """From the first publish until every message is in a stored L1: messages per second,
    and CPU milliseconds a message in this process and in the Redis servers. The clock
    starts once that is measured (see the module's docstring), to close what is left."""
    catalog = load_catalog(settings.broker.topic_prefix)
    await ensure_topics(settings.broker.bootstrap, catalog.topics)
    consumers = {Part.SEGMENTER, Part.CONSOLIDATOR}
    async with run_parts(settings, consumers, fast_rebalance=True) as running:
        container, segmenter = running.container, running.segmenter
        assert segmenter is not None
        await container.embedder.embed(["warm up"])
        redis_cpu = await _redis_cpu_s(settings)
        started, cpu = time.perf_counter(), time.process_time()
        await publish_file(
            events, catalog=catalog, bootstrap=settings.broker.bootstrap, show_progress=False
        )
        while segmenter.handled < messages:  # noqa: ASYNC110 - a counter the workers advance
            await asyncio.sleep(0.05)
        ingest_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu
        redis_cpu = await _redis_cpu_s(settings) - redis_cpu
        clock = build_clock(container)
        clock.start()
        try:
            await wait_caught_up(container, users, timeout_s=1800)
        finally:
            clock.shutdown(wait=False)
    return {
        "ingest_msgs_per_s": round(messages / ingest_s, 1),
        "ingest_cpu_ms_per_msg": round(cpu_s * 1000 / messages, 3),
        "redis_cpu_ms_per_msg": round(redis_cpu * 1000 / messages, 3),
    }


async def _due_read_ms(container: Container) -> float:
    """Median wall time of one read of the due users, what each clock tick starts with."""
    times = []
    for _ in range(DUE_READS):
        began = time.perf_counter()
        await container.tree.due_users(datetime.now(UTC))
        times.append(ms_since(began))
    return statistics.median(times)


async def _recall_interleaved(
    layouts: dict[str, Settings], questions: list[tuple[str, str]]
) -> dict[str, dict[str, float]]:
    """Every question on each layout in turn, which goes first alternating: a burst of load
    from elsewhere falls on both. Per layout: p50 and p95 in ms, and a due-users read."""
    async with AsyncExitStack() as stack:
        containers = {
            name: await stack.enter_async_context(connect(settings))
            for name, settings in layouts.items()
        }
        pipelines = {name: build_recall(c).pipeline for name, c in containers.items()}
        for pipeline in pipelines.values():
            for user, question in questions[:3]:  # warm up
                await pipeline.recall(RecallRequest(user, question))
        latencies: dict[str, list[float]] = {name: [] for name in layouts}
        for number, (user, question) in enumerate(questions):
            order = list(layouts) if number % 2 == 0 else list(layouts)[::-1]
            for name in order:
                began = time.perf_counter()
                await pipelines[name].recall(RecallRequest(user, question))
                latencies[name].append(ms_since(began))
        return {
            name: {
                "recall_queries": len(values),
                "recall_p50_ms": round(statistics.median(values), 2),
                "recall_p95_ms": round(nearest_rank(values, 95), 2),
                "due_users_read_ms": round(await _due_read_ms(containers[name]), 2),
            }
            for name, values in latencies.items()
        }


async def run(conversations: int, rounds: int) -> dict[str, Any]:
    files = conversation_files()[:conversations]
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memstream-bench-cluster-") as scratch:
        root = Path(scratch)
        events = root / "events.jsonl"
        users, messages, questions = _write_events(files, events)
        with running_cluster(root / "cluster") as cluster:
            async with EmbeddedStack(Settings(data_dir=root / "stack")) as stack:
                for round_no in range(rounds):
                    # Alternated, so a machine that slows down during the run tilts neither.
                    order = LAYOUTS if round_no % 2 == 0 else LAYOUTS[::-1]
                    layouts: dict[str, Settings] = {}
                    ingests: dict[str, dict[str, float]] = {}
                    for layout in order:
                        url = cluster.url if layout == "cluster" else None
                        data = root / f"data-{round_no}-{layout}"
                        layouts[layout] = _layout_settings(stack.settings(), url, data)
                        ingests[layout] = await _ingest(layouts[layout], events, users, messages)
                    recall = await _recall_interleaved(layouts, questions)
                    for layout in order:
                        runs.append(
                            {
                                "round": round_no + 1,
                                "layout": layout,
                                "messages": messages,
                                **ingests[layout],
                                **recall[layout],
                            }
                        )
                        print(json.dumps(runs[-1]), flush=True)
    return {"benchmark": "cluster", **_ratios(runs), "target_ratio": TARGET_RATIO, "runs": runs}


def _ratios(runs: list[dict[str, Any]]) -> dict[str, float]:
    """The cluster's cost over the single primary's, per round, median over the rounds (above
    1: the cluster costs more): ingest time per message, this process's CPU a message while
    ingesting, and recall p95."""
    single = sorted((r for r in runs if r["layout"] == "single"), key=lambda r: r["round"])
    cluster = sorted((r for r in runs if r["layout"] == "cluster"), key=lambda r: r["round"])
    pairs = list(zip(single, cluster, strict=True))

    def median(ratio: Callable[[dict[str, Any], dict[str, Any]], float]) -> float:
        return round(statistics.median(ratio(s, c) for s, c in pairs), 3)

    return {
        "ingest_time_ratio": median(lambda s, c: s["ingest_msgs_per_s"] / c["ingest_msgs_per_s"]),
        "ingest_cpu_ratio": median(
            lambda s, c: c["ingest_cpu_ms_per_msg"] / s["ingest_cpu_ms_per_msg"]
        ),
        "recall_p95_ratio": median(lambda s, c: c["recall_p95_ms"] / s["recall_p95_ms"]),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench-results/cluster.json"))
    parser.add_argument("--conversations", type=int, default=1, help="how many LoCoMo files")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each layout, alternated")
    args = parser.parse_args(argv)
    if args.conversations < 1 or args.rounds < 1:
        parser.error("--conversations and --rounds must be at least 1")
    result = asyncio.run(run(args.conversations, args.rounds))
    write_report(args.out, result)
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))


if __name__ == "__main__":
    main()
