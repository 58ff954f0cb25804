"""Rebuild throughput, and what a running rebuild costs the live turns.

    python -m memstream_lab.bench.rebuild --out bench-results/rebuild.json

One run on the embedded stack (Tansu, Redis, Qdrant local mode, offline LLM, the local
embedder), all phases against the same stores, in one process:

1. **First ingest**: the LoCoMo conversations published, timed until every window is
   consolidated (and, as `tools.bench.ingest` reports it, until every message is in a stored
   L1).
2. **Rebuild throughput**: the workers restarted with a new prompt version, an unbounded
   rebuild rate and large chunks (`--throughput-chunk`); a `rebuild.v1` per user, timed
   until every rebuild is done (every leaf re-derived, every window above consolidated
   again). Its rate in messages/s over the first ingest's (to everything consolidated) is
   the figure of merit.
3. **Live turns during a rebuild**, in `--rounds` rounds: the workers restarted with another
   prompt version and the deployment's rebuild pace (`rebuild_leaves_per_s`); the same
   conversations published for new users, timed until every message is in a stored L1, once
   alone and once right after rebuilds of the first users were requested (the order
   alternating from round to round, the rest of each rebuild finished unpaced in between,
   each phase on freshly started workers). The median of the rounds' ratios of the two rates
   is the target (>= 0.8): on a loaded machine one round is noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from memstream.bootstrap import Container, connect
from memstream.contracts.codec import encode_rebuild
from memstream.contracts.records import Outbound
from memstream.domain.models import Level
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.embedded.stack import EmbeddedStack
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.recall.rebuilds import rebuild_progress
from memstream.settings import Settings
from memstream_lab.locomo import conversation_events, conversation_files, load_conversation
from memstream_lab.measure import write_report


def _write_events(files: list[Path], out: Path, prefix: str) -> tuple[list[str], int]:
    """The conversations as one JSONL, user ids `prefix` + file stem; users and messages."""
    users: list[str] = []
    messages = 0
    with out.open("w") as sink:
        for path in files:
            user = f"{prefix}{path.stem}"
            for event in conversation_events(load_conversation(path)):
                event = _renamed(event, user)
                sink.write(json.dumps(event) + "\n")
                messages += event["type"] == "turn.v1"
            users.append(user)
    return users, messages


def _renamed(event: dict[str, Any], user: str) -> dict[str, Any]:
    renamed = dict(event, user_id=user)
    if "event_id" in renamed:
        renamed["event_id"] = f"{user}:{renamed['event_id']}"
    return renamed


async def _leaves(container: Container, users: list[str]) -> int:
    return sum([await container.tree.count(u, Level.SEGMENT) for u in users])


async def _poll(check: Any, timeout_s: float, poll_s: float = 0.1) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not done within {timeout_s:.0f} s")
        await asyncio.sleep(poll_s)


async def _ingest(container: Container, events: Path, users: list[str], leaves: int) -> float:
    """Seconds from the first publish until the users have `leaves` L1s stored."""
    started = time.perf_counter()
    await publish_file(
        events,
        catalog=container.catalog,
        bootstrap=container.settings.broker.bootstrap,
        show_progress=False,
    )

    async def stored() -> bool:
        return await _leaves(container, users) >= leaves

    await _poll(stored, timeout_s=1800)
    return time.perf_counter() - started


async def _request_rebuilds(container: Container, users: list[str]) -> dict[str, str]:
    ids = {user: uuid.uuid4().hex for user in users}
    turns = container.catalog.turns.name
    await container.publisher.publish(
        [Outbound(turns, u, encode_rebuild(u, rid)) for u, rid in ids.items()]
    )
    return ids


async def _all_rebuilt(container: Container, ids: dict[str, str]) -> bool:
    for user, rebuild_id in ids.items():
        if (await rebuild_progress(container.tree, user, rebuild_id)).status != "done":
            return False
    return True


async def run(
    files: list[Path], live_pace: float, throughput_chunk: int, live_rounds: int
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memstream-bench-") as scratch:
        root = Path(scratch)
        first_file = root / "first.jsonl"
        users, messages = _write_events(files, first_file, "locomo-")
        settings = Settings(
            data_dir=root / "data", clock_interval_s=0.5, clock_grace_s=0.0, prompt_version="a"
        )
        async with AsyncExitStack() as running:
            stack = await running.enter_async_context(EmbeddedStack(settings))
            container = await running.enter_async_context(
                connect(stack.settings(), prioritise_online=True)
            )
            await container.embedder.embed(["warm up"])

            # 1. First ingest.
            async with run_parts(container, WRITE_PATH, fast_rebalance=True) as process:
                assert process.segmenter is not None
                started = time.perf_counter()
                published = await publish_file(
                    first_file,
                    catalog=container.catalog,
                    bootstrap=container.settings.broker.bootstrap,
                    show_progress=False,
                )
                segmenter = process.segmenter
                await _poll(lambda: _true(segmenter.handled >= published), 1800, 0.05)
                to_l1 = time.perf_counter() - started
                await wait_caught_up(container, users, timeout_s=1800, poll_s=0.25)
                ingest_s = time.perf_counter() - started
            leaves = await _leaves(container, users)
            nodes = sum([await container.tree.count(u, lv) for u in users for lv in Level])

            # 2. Rebuild throughput: a new prompt version, no pace to speak of.
            unpaced = container.settings.model_copy(
                update={
                    "prompt_version": "b",
                    "rebuild_leaves_per_s": 10_000.0,
                    "rebuild_chunk_leaves": throughput_chunk,
                }
            )
            async with _started(container, unpaced):
                started = time.perf_counter()
                ids = await _request_rebuilds(container, users)
                await _poll(lambda: _all_rebuilt(container, ids), timeout_s=1800, poll_s=0.25)
                rebuild_s = time.perf_counter() - started
            versions = {
                n.version
                for u in users
                for n in await container.tree.get_many(
                    u, await container.tree.level_ids(u, Level.SEGMENT, limit=100_000)
                )
            }

            # 3. Live turns alone and while the first users are rebuilt at the set pace, in
            # rounds, the order alternating; every phase on freshly started workers.
            rounds = [
                await _live_round(container, files, root, n, users, leaves, live_pace)
                for n in range(live_rounds)
            ]
    ingest_rate = messages / ingest_s
    rebuild_rate = messages / rebuild_s
    ratios = sorted(r["ratio"] for r in rounds)
    return {
        "benchmark": "rebuild",
        "conversations": len(files),
        "messages": messages,
        "leaves": leaves,
        "nodes": nodes,
        "first_ingest": {
            "seconds_to_all_l1": round(to_l1, 2),
            "seconds_to_all_consolidated": round(ingest_s, 2),
            "msgs_per_s_to_all_consolidated": round(ingest_rate, 1),
        },
        "rebuild": {
            "seconds_to_done": round(rebuild_s, 2),
            "msgs_per_s": round(rebuild_rate, 1),
            "relative_to_first_ingest": round(rebuild_rate / ingest_rate, 3),
            "rebuild_chunk_leaves": throughput_chunk,
            "leaf_versions_after": sorted(versions),
        },
        "live_during_rebuild": {
            "rebuild_leaves_per_s": live_pace,
            "rebuild_chunk_leaves": Settings().rebuild.chunk_leaves,
            "median_ratio": ratios[len(ratios) // 2],
            "target_ratio": 0.8,
            "rounds": rounds,
        },
        "machine": {"python": platform.python_version(), "cpus": len(os.sched_getaffinity(0))},
    }


@asynccontextmanager
async def _started(container: Container, settings: Settings) -> AsyncIterator[None]:
    """The write path on `settings`, once every part runs (the group joined)."""
    ready = asyncio.Event()
    workers = replace(container, settings=settings)
    async with run_parts(workers, WRITE_PATH, fast_rebalance=True, on_started=ready.set):
        await asyncio.wait_for(ready.wait(), 120)
        yield


async def _live_round(
    container: Container,
    files: list[Path],
    root: Path,
    number: int,
    rebuilt: list[str],
    leaves: int,
    pace: float,
) -> dict[str, Any]:
    """The conversations for new users alone, and while `rebuilt` are rebuilt (in turn)."""
    paced = container.settings.model_copy(
        update={"prompt_version": f"live-{number}", "rebuild_leaves_per_s": pace}
    )
    finish = paced.model_copy(
        update={"rebuild_leaves_per_s": 10_000.0, "rebuild_chunk_leaves": 256}
    )
    order = ("alone", "during") if number % 2 == 0 else ("during", "alone")
    rates: dict[str, float] = {}
    round_: dict[str, Any] = {"order": list(order)}
    for kind in order:
        events = root / f"{kind}-{number}.jsonl"
        users, messages = _write_events(files, events, f"{kind}{number}-")
        async with _started(container, paced):
            ids = await _request_rebuilds(container, rebuilt) if kind == "during" else {}
            seconds = await _ingest(container, events, users, leaves)
            if ids:
                progress = [await rebuild_progress(container.tree, u, r) for u, r in ids.items()]
                round_["rebuild_still_running_at_end"] = any(p.status != "done" for p in progress)
                round_["leaves_rederived_meanwhile"] = sum(p.leaves_done for p in progress)
            await wait_caught_up(container, users, timeout_s=1800, poll_s=0.25)
        if ids:  # the rest of the rebuild unpaced, so the next phase runs without it
            async with _started(container, finish):
                await _poll(partial(_all_rebuilt, container, ids), timeout_s=1800, poll_s=0.25)
        rates[kind] = messages / seconds
        round_[f"{kind}_msgs_per_s"] = round(rates[kind], 1)
    round_["ratio"] = round(rates["during"] / rates["alone"], 3)
    return round_


async def _true(value: bool) -> bool:
    return value


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench-results/rebuild.json"))
    parser.add_argument("--conversations", type=int, default=5, help="how many LoCoMo files")
    parser.add_argument(
        "--pace",
        type=float,
        default=Settings().rebuild.leaves_per_s,
        help="rebuild_leaves_per_s while live turns are measured (default: the setting's)",
    )
    parser.add_argument(
        "--throughput-chunk",
        type=int,
        default=256,
        help="rebuild_chunk_leaves while the rebuild's own throughput is measured",
    )
    parser.add_argument("--rounds", type=int, default=3, help="live rounds (alone, during)")
    args = parser.parse_args(argv)
    files = conversation_files()[: args.conversations]
    result = asyncio.run(run(files, args.pace, args.throughput_chunk, args.rounds))
    write_report(args.out, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
