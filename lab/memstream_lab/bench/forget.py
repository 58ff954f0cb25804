"""Forgetting one message of a large user: time from request to done, and nodes rewritten.

    python -m memstream_lab.bench.forget --out bench-results/forget.json

One user is built through the whole write path on the embedded stack (Tansu, Redis, Qdrant
local mode, offline LLM, the local embedder) from the five LoCoMo conversations replayed
one after the other, a year apart each, until it has `--messages` messages (5,000: about
5,000 L1s, a LoCoMo message being its own exchange, and some 600 nodes above). Then
`--forgets` messages spread over its history are forgotten one at a time through the recall
API (`DELETE /v1/users/{u}/messages/{m}`); each is timed from the request until its status
route (`GET .../forget`) says done, polled every `--poll-ms`: the segmenter has removed or
rewritten the L1 and the consolidator has rewritten every ancestor (the segmenter's part,
until the L1 no longer holds the message, is timed apart, as is one status request).
Between two forgets the tree is read whole, and the nodes whose version moved are counted.

It also times how the segmenter finds the L1 of a message: through the per-user message
index (`leaves_citing`) against reading every L1 of the user (what a forget did before the
index), both on the same Redis in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from memstream.bootstrap import Container
from memstream.domain.models import Level
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.embedded.stack import EmbeddedStack
from memstream.entrypoints.runner import EVERYTHING, run_parts
from memstream.settings import Settings
from memstream_lab.bench.long_user import USER, history
from memstream_lab.measure import free_port, ms_since, write_report


async def _versions(container: Container) -> dict[str, int]:
    versions: dict[str, int] = {}
    for level in Level:
        offset = 0
        while ids := await container.tree.level_ids(USER, level, offset=offset, limit=1000):
            offset += len(ids)
            versions.update((n.id, n.version) for n in await container.tree.get_many(USER, ids))
    return versions


async def _lookup_times(container: Container, message_ids: list[str]) -> dict[str, float]:
    """Mean ms to find the L1 of one message: the index against reading every L1."""
    tree = container.tree

    async def by_scan(message_id: str) -> list[str]:
        found, offset = [], 0
        while ids := await tree.level_ids(USER, Level.SEGMENT, offset=offset, limit=500):
            offset += len(ids)
            found += [n.id for n in await tree.get_many(USER, ids) if message_id in n.source_ids]
        return found

    # A user's first lookup completes the index once (for L1s older than the index).
    started = time.perf_counter()
    await tree.leaves_citing(USER, message_ids[:1])
    result: dict[str, float] = {"first_index_ms": round(ms_since(started), 1)}
    for name, find in (("index", None), ("scan", by_scan)):
        wall, cpu = time.perf_counter(), time.process_time()
        for message_id in message_ids:
            if find is None:
                await tree.leaves_citing(USER, [message_id])
            else:
                await find(message_id)
        result[f"{name}_ms"] = round((time.perf_counter() - wall) * 1000 / len(message_ids), 3)
        cpu_ms = (time.process_time() - cpu) * 1000 / len(message_ids)
        result[f"{name}_cpu_ms"] = round(cpu_ms, 3)
    return result


async def _forget_one(
    api: httpx.AsyncClient, container: Container, message_id: str, poll_s: float
) -> tuple[float, float, float]:
    """Seconds from the request until the L1 no longer holds the message (the segmenter's
    part, read from the message index), until the status route says done, and the mean
    seconds one status request took."""
    started = time.perf_counter()
    reply = await api.delete(f"/v1/users/{USER}/messages/{quote(message_id, safe='')}")
    reply.raise_for_status()
    [handle] = reply.json()["handles"]
    leaf_gone: float | None = None
    polls: list[float] = []
    # The status route is the measurement: polled, as a client would.
    while True:
        asked = time.perf_counter()
        done = (await api.get(handle)).json()["status"] == "done"
        polls.append(time.perf_counter() - asked)
        if leaf_gone is None and not await container.tree.leaves_citing(USER, [message_id]):
            leaf_gone = time.perf_counter() - started
        if done:
            break
        await asyncio.sleep(poll_s)
    took = time.perf_counter() - started
    return (took if leaf_gone is None else leaf_gone), took, statistics.mean(polls)


async def run(messages: int, forgets: int, poll_s: float) -> dict[str, Any]:
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="memstream-bench-") as scratch:
        events_file = Path(scratch) / "events.jsonl"
        turn_ids: list[str] = []
        with events_file.open("w") as sink:
            for event in history(messages):
                sink.write(json.dumps(event) + "\n")
                if event["type"] == "turn.v1":
                    turn_ids.append(event["event_id"])
        settings = Settings(
            data_dir=Path(scratch) / "data", clock_interval_s=0.5, clock_grace_s=0.0
        )
        async with AsyncExitStack() as running:
            stack = await running.enter_async_context(EmbeddedStack(settings))
            served = stack.settings().model_copy(
                update={"recall_auth_disabled": True, "api_port": free_port()}
            )
            process = await running.enter_async_context(
                run_parts(served, EVERYTHING, fast_rebalance=True)
            )
            container = process.container
            started = time.perf_counter()
            await publish_file(
                events_file,
                catalog=container.catalog,
                bootstrap=served.broker.bootstrap,
                show_progress=False,
            )
            await wait_caught_up(container, [USER], timeout_s=3600)
            built_s = time.perf_counter() - started
            nodes = {level.label: await container.tree.count(USER, level) for level in Level}
            step = len(turn_ids) // forgets
            chosen = [turn_ids[i * step + step // 2] for i in range(forgets)]
            lookup = await _lookup_times(container, chosen)
            api = await running.enter_async_context(
                httpx.AsyncClient(base_url=f"http://127.0.0.1:{served.api.port}", timeout=60)
            )
            took: list[float] = []
            leaf_gone: list[float] = []
            status_s: list[float] = []
            rewritten: list[int] = []
            removed: list[int] = []
            before = await _versions(container)
            for message_id in chosen:
                leaf, done, poll = await _forget_one(api, container, message_id, poll_s)
                leaf_gone.append(leaf)
                took.append(done)
                status_s.append(poll)
                await wait_caught_up(container, [USER], timeout_s=600)
                after = await _versions(container)
                rewritten.append(sum(1 for i, v in after.items() if before.get(i, v) != v))
                removed.append(len(before.keys() - after.keys()))
                before = after
    return {
        "benchmark": "forget",
        "messages": len(turn_ids),
        "nodes": nodes,
        "build_seconds": round(built_s, 1),
        "forgets": forgets,
        "poll_ms": round(poll_s * 1000),
        "request_to_done_s": _spread(took),
        # The segmenter's part: the L1 rewritten or removed (then the ancestors follow).
        "request_to_l1_gone_s": _spread(leaf_gone),
        "status_request_ms": round(statistics.mean(status_s) * 1000, 1),
        "nodes_rewritten_per_forget": {
            "mean": round(statistics.mean(rewritten), 2),
            "min": min(rewritten),
            "max": max(rewritten),
        },
        "nodes_removed_per_forget": {"mean": round(statistics.mean(removed), 2)},
        "find_l1_of_a_message": lookup,
        "machine": {
            "python": platform.python_version(),
            "cpus": len(os.sched_getaffinity(0)),
            "loadavg_1m_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        },
    }


def _spread(times: list[float]) -> dict[str, Any]:
    ordered = sorted(times)
    return {
        "p50": round(statistics.median(ordered), 3),
        "p95": round(ordered[max(0, round(0.95 * len(ordered)) - 1)], 3),
        "max": round(ordered[-1], 3),
        "each": [round(t, 3) for t in times],
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench-results/forget.json"))
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--forgets", type=int, default=20)
    parser.add_argument("--poll-ms", type=float, default=50.0)
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.messages, args.forgets, args.poll_ms / 1000))
    write_report(args.out, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
