"""Redis Cluster against a single primary: ingest rate and recall p95, in one run.

    memstream bench cluster --conversations 2 --rounds 2 --out bench-results/cluster.json

One embedded stack (broker, the single primary, Qdrant's in-process engine) and a real
three-primary Redis Cluster started beside it (`memstream_lab.redis_cluster`). Each round
runs the write path once per layout, in turn: the same LoCoMo conversations, each run with
topics, consumer group, Redis namespace and collection of its own. Ingest is timed from the
first publish until every message is in a stored L1 (the segmenter's count), as in `bench
ingest`; recall is timed in the process (the pipeline the API runs, no HTTP), over the
conversations' questions once everything is consolidated. The figures are the cluster's
over the single primary's, median over the rounds: the issue's target is within 1.2x.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memstream.adapters.kafka.admin import ensure_topics
from memstream.bootstrap import build_recall
from memstream.contracts.catalog import load_catalog
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.embedded.stack import EmbeddedStack
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.recall.pipeline import RecallRequest
from memstream.settings import Settings
from memstream_lab.locomo import conversation_events, conversation_files, load_conversation
from memstream_lab.measure import ms_since, nearest_rank, write_report
from memstream_lab.redis_cluster import running_cluster

TARGET_RATIO = 1.2
LAYOUTS = ("single", "cluster")


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


async def _one_layout(
    base: Settings,
    cluster_url: str | None,
    events: Path,
    users: list[str],
    messages: int,
    questions: list[tuple[str, str]],
    data_dir: Path,
) -> dict[str, Any]:
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
    settings = base.model_copy(update=update)
    catalog = load_catalog(settings.broker.topic_prefix)
    await ensure_topics(settings.broker.bootstrap, catalog.topics)
    async with run_parts(settings, WRITE_PATH, fast_rebalance=True) as running:
        container, segmenter = running.container, running.segmenter
        assert segmenter is not None
        await container.embedder.embed(["warm up"])
        started = time.perf_counter()
        await publish_file(
            events, catalog=catalog, bootstrap=settings.broker.bootstrap, show_progress=False
        )
        while segmenter.handled < messages:  # noqa: ASYNC110 - a counter the workers advance
            await asyncio.sleep(0.05)
        ingest_s = time.perf_counter() - started
        await wait_caught_up(container, users, timeout_s=1800)
        pipeline = build_recall(container).pipeline
        for user, question in questions[:3]:  # warm up
            await pipeline.recall(RecallRequest(user, question))
        latencies = []
        for user, question in questions:
            began = time.perf_counter()
            await pipeline.recall(RecallRequest(user, question))
            latencies.append(ms_since(began))
    return {
        "layout": "cluster" if cluster_url else "single",
        "messages": messages,
        "ingest_msgs_per_s": round(messages / ingest_s, 1),
        "recall_queries": len(latencies),
        "recall_p50_ms": round(statistics.median(latencies), 2),
        "recall_p95_ms": round(nearest_rank(latencies, 95), 2),
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
                    for layout in order:
                        url = cluster.url if layout == "cluster" else None
                        data = root / f"data-{round_no}-{layout}"
                        runs.append(
                            await _one_layout(
                                stack.settings(), url, events, users, messages, questions, data
                            )
                        )
                        print(json.dumps(runs[-1]), flush=True)
    return {"benchmark": "cluster", **_ratios(runs), "target_ratio": TARGET_RATIO, "runs": runs}


def _ratios(runs: list[dict[str, Any]]) -> dict[str, float]:
    """The cluster's cost over the single primary's, median over the rounds (above 1: the
    cluster is slower): ingest time per message, and recall p95."""
    single = [r for r in runs if r["layout"] == "single"]
    cluster = [r for r in runs if r["layout"] == "cluster"]
    ingest = [
        s["ingest_msgs_per_s"] / c["ingest_msgs_per_s"]
        for s, c in zip(single, cluster, strict=True)
    ]
    recall = [c["recall_p95_ms"] / s["recall_p95_ms"] for s, c in zip(single, cluster, strict=True)]
    return {
        "ingest_time_ratio": round(statistics.median(ingest), 3),
        "recall_p95_ratio": round(statistics.median(recall), 3),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench-results/cluster.json"))
    parser.add_argument("--conversations", type=int, default=2, help="how many LoCoMo files")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each layout, alternated")
    args = parser.parse_args(argv)
    if args.conversations < 1 or args.rounds < 1:
        parser.error("--conversations and --rounds must be at least 1")
    result = asyncio.run(run(args.conversations, args.rounds))
    write_report(args.out, result)
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))


if __name__ == "__main__":
    main()
