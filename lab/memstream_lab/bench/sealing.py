"""What sealing costs: ingest rate and recall latency with the users' words sealed and not.

    memstream bench sealing --out bench-results/sealing.json --messages 600 --rounds 2

One embedded stack (Tansu, Redis, Qdrant's in-process engine, offline LLM, the local
embedder); each round runs the whole write path and the recall API twice, once with sealing
off (MEMSTREAM_SEAL_TOPICS and MEMSTREAM_SEAL_INDEX false, turns sent plain) and once on
(both true, and the SDK's producer sealing the turns: `seal_turns`), in alternating order
from round to round, each on topics, a Redis namespace and an index collection of its own.
A run publishes `--messages` LoCoMo messages (the conversations in turn) for one user and is
timed from the first publish until every window is consolidated (messages/s); then
`--queries` LoCoMo questions are asked through the API (`recall_probe`). The figures to read
are the ratios on/off within a round (shared cores move absolute figures from one run to the
next); the JSON gives each run too, and the CPU time of each sealing step alone
(`crypto_us_per_record`), which the load of other processes does not move.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx

from memstream.adapters.kafka.admin import ensure_topics
from memstream.client import AsyncMemstreamProducer, AsyncRecallClient
from memstream.contracts.catalog import load_catalog
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.stack import EmbeddedStack
from memstream.entrypoints.runner import EVERYTHING, run_parts
from memstream.settings import Settings
from memstream_lab.bench import recall_probe
from memstream_lab.bench.long_user import USER, history
from memstream_lab.locomo import conversation_files, load_conversation
from memstream_lab.measure import free_port, write_report


def questions(limit: int) -> list[str]:
    asked: list[str] = []
    for path in conversation_files():
        asked += [q.question for q in load_conversation(path).questions if q.category != 5]
    return asked[:limit]


async def publish(
    settings: Settings, events: Sequence[dict[str, Any]], seal_turns: AsyncRecallClient | None
) -> None:
    """The events through the SDK's producer, the turns sealed by it when `seal_turns` is
    given (so the sealed half pays for the producer's sealing and the segmenter's opening)."""
    async with AsyncMemstreamProducer(
        settings.broker.bootstrap,
        topic_prefix=settings.broker.topic_prefix,
        idempotent=False,  # the embedded broker hands out no producer ids
        seal_turns=seal_turns,
    ) as producer:
        for event in events:
            await producer.publish(event)


async def one_run(
    base: Settings,
    events: Sequence[dict[str, Any]],
    messages: int,
    sealed: bool,
    asks: Sequence[str],
) -> dict[str, Any]:
    uid = uuid.uuid4().hex[:10]
    settings = base.model_copy(
        update={
            "topic_prefix": f"bench-{uid}.",
            "consumer_group": f"bench-{uid}",
            "qdrant_collection": f"bench_{uid}",
            "redis_namespace": f"bench-{uid}",
            "recall_auth_disabled": True,
            "api_port": free_port(),
            "seal_topics": sealed,
            "seal_index": sealed,
            # The clock closes the last day, week and month: at its default minute the run
            # would end on a tick, whatever the write path's own rate.
            "clock_interval_s": 0.5,
        }
    )
    topics = load_catalog(settings.broker.topic_prefix).topics
    await ensure_topics(settings.broker.bootstrap, topics)
    api_url = f"http://127.0.0.1:{settings.api.port}"
    up = asyncio.Event()
    async with run_parts(settings, EVERYTHING, fast_rebalance=True, on_started=up.set) as process:
        await asyncio.wait_for(up.wait(), 300)  # the API hands out the turn keys
        container = process.container
        async with AsyncRecallClient(api_url) as api:
            started = time.perf_counter()
            await publish(settings, events, api if sealed else None)
            await wait_caught_up(container, [USER], timeout_s=3600)
            ingest_s = time.perf_counter() - started
        with httpx.Client(base_url=api_url, timeout=60) as client:
            recall = await asyncio.to_thread(recall_probe.measure, client, asks, 20.0, USER)
    return {
        "sealed": sealed,
        "ingest_seconds": round(ingest_s, 2),
        "messages_per_s": round(messages / ingest_s, 2),
        "recall": recall,
    }


async def run(messages: int, rounds: int, queries: int) -> dict[str, Any]:
    asks = questions(queries)
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memstream-bench-") as scratch:
        events = list(history(messages))
        async with AsyncExitStack() as running:
            stack = await running.enter_async_context(
                EmbeddedStack(Settings(data_dir=Path(scratch) / "data", clock_grace_s=0.0))
            )
            base = stack.settings()
            for r in range(rounds):
                order = (False, True) if r % 2 == 0 else (True, False)
                for sealed in order:
                    result = await one_run(base, events, messages, sealed, asks)
                    runs.append({"round": r, **result})
                    print(json.dumps(runs[-1]), flush=True)
    return {
        "benchmark": "sealing",
        "messages": messages,
        "queries": len(asks),
        "rounds": rounds,
        "ratios": _ratios(runs),
        "crypto_us_per_record": crypto_costs(),
        "runs": runs,
        "cpus": len(os.sched_getaffinity(0)),
    }


def crypto_costs(records: int = 2000) -> dict[str, float]:
    """CPU microseconds per record of each sealing step, alone (process time: what the load
    of other processes does not add): a LoCoMo turn sealed by the producer and opened by the
    segmenter, and a memory sealed by the publisher and opened for a feed consumer."""
    from memstream.contracts.sealed import new_data_key, open_sealed, seal
    from memstream.contracts.sealed_turns import open_turn, seal_turn, turn_public_key

    key = new_data_key()
    public = turn_public_key(key)
    turn = next(e for e in history(1) if e["type"] == "turn.v1")
    memory = {"type": "memory.v1", "user_id": USER, "text": str(turn["text"]) * 4}
    sealed_turn, sealed_memory = seal_turn(turn, public), seal(memory, key)
    steps = {
        "seal_turn": lambda: seal_turn(turn, public),
        "open_turn": lambda: open_turn(sealed_turn, key),
        "seal_memory": lambda: seal(memory, key),
        "open_memory": lambda: open_sealed(sealed_memory, key),
    }
    costs: dict[str, float] = {}
    for name, step in steps.items():
        started = time.process_time()
        for _ in range(records):
            step()
        costs[name] = round((time.process_time() - started) / records * 1e6, 1)
    return costs


def _ratios(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per round, sealed over not sealed: ingest rate and recall p50/p95; and their medians."""
    per_round: list[dict[str, float]] = []
    for r in sorted({run["round"] for run in runs}):
        on = next(x for x in runs if x["round"] == r and x["sealed"])
        off = next(x for x in runs if x["round"] == r and not x["sealed"])
        per_round.append(
            {
                "ingest_rate": round(on["messages_per_s"] / off["messages_per_s"], 3),
                "recall_p50": round(on["recall"]["p50_ms"] / off["recall"]["p50_ms"], 3),
                "recall_p95": round(on["recall"]["p95_ms"] / off["recall"]["p95_ms"], 3),
            }
        )
    medians = {k: round(statistics.median(x[k] for x in per_round), 3) for k in per_round[0]}
    return {"per_round": per_round, "median": medians}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="memstream bench sealing", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--out", type=Path, default=Path("bench-results/sealing.json"))
    parser.add_argument("--messages", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.messages, max(1, args.rounds), args.queries))
    write_report(args.out, result)
    print(json.dumps(result["ratios"], indent=2))


if __name__ == "__main__":
    main()
