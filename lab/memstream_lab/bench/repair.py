"""Repair throughput: a LoCoMo user's lost index, then its lost tree, written again.

    python -m memstream_lab.bench.repair --out bench-results/repair.json

One run on the embedded stack (Tansu, Redis, Qdrant's in-process engine, offline LLM, the
local embedder), in one process:

1. **Ingest**: one LoCoMo conversation published, timed until every window is consolidated
   (the rate a rebuild is compared with in `bench rebuild`).
2. **Index lost**: the stores closed, the index's directory deleted, the stores opened again;
   `memstream repair` of the user timed until done (every node upserted with vectors from
   the configured embedder), unpaced.
3. **Tree lost**: Redis flushed; the repair timed again (every node written back from the
   index's payloads).

After each repair the user's nodes are compared with those before the loss: they must be
equal, node by node. Rates are messages of the conversation per second of repair.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from memstream.bootstrap import Container, build_repair, connect, qdrant_edge_dir
from memstream.domain.models import Level, MemoryNode
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.embedded.stack import EmbeddedStack
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.settings import Settings
from memstream_lab.locomo import conversation_events, conversation_files, load_conversation
from memstream_lab.measure import write_report


async def _nodes(container: Container, user: str) -> dict[str, MemoryNode]:
    found: list[MemoryNode] = []
    for level in Level:
        ids = await container.tree.level_ids(user, level, limit=100_000)
        found += await container.tree.get_many(user, ids)
    return {n.id: n for n in found}


async def _timed_repair(container: Container, user: str) -> tuple[float, Any]:
    started = time.perf_counter()
    report = await build_repair(container).repair(user)
    return time.perf_counter() - started, report


async def run(path: Path) -> dict[str, Any]:
    user = f"locomo-{path.stem}"
    events = conversation_events(load_conversation(path), user)
    messages = sum(e["type"] == "turn.v1" for e in events)
    with tempfile.TemporaryDirectory(prefix="memstream-bench-") as scratch:
        root = Path(scratch)
        source = root / "events.jsonl"
        source.write_text("".join(json.dumps(e) + "\n" for e in events))
        base = Settings(data_dir=root / "data", clock_interval_s=0.5, clock_grace_s=0.0)
        async with AsyncExitStack() as running:
            stack = await running.enter_async_context(EmbeddedStack(base))
            # Unpaced: the figure is what the repair itself costs.
            settings = stack.settings().model_copy(update={"rebuild_repair_nodes_per_s": 1e5})
            async with connect(settings, prioritise_online=True) as container:
                await container.embedder.embed(["warm up"])
                started = time.perf_counter()
                async with run_parts(container, WRITE_PATH, fast_rebalance=True):
                    await publish_file(
                        source,
                        catalog=container.catalog,
                        bootstrap=settings.broker.bootstrap,
                        show_progress=False,
                    )
                    await wait_caught_up(container, [user], timeout_s=1800, poll_s=0.25)
                ingest_s = time.perf_counter() - started
                before = await _nodes(container, user)
            shutil.rmtree(qdrant_edge_dir(settings) / settings.qdrant.collection)
            async with connect(settings, producer=False) as container:
                await container.embedder.embed(["warm up"])
                index_s, index_report = await _timed_repair(container, user)
                index_equal = await _nodes(container, user) == before
                await container.tree._r.flushall()  # the stack's own Redis
                tree_s, tree_report = await _timed_repair(container, user)
                tree_equal = await _nodes(container, user) == before
                again_s, again = await _timed_repair(container, user)
    return {
        "benchmark": "repair",
        "conversation": path.stem,
        "messages": messages,
        "nodes": len(before),
        "ingest": {"seconds": round(ingest_s, 2), "msgs_per_s": round(messages / ingest_s, 1)},
        "index_lost": {
            "seconds": round(index_s, 2),
            "msgs_per_s": round(messages / index_s, 1),
            "points_written": index_report.indexed,
            "nodes_equal_after": index_equal,
        },
        "tree_lost": {
            "seconds": round(tree_s, 2),
            "msgs_per_s": round(messages / tree_s, 1),
            "nodes_written": tree_report.restored,
            "nodes_equal_after": tree_equal,
        },
        "repair_again": {
            "seconds": round(again_s, 2),
            "written": again.indexed + again.restored,
        },
        "machine": {"python": platform.python_version(), "cpus": len(os.sched_getaffinity(0))},
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench-results/repair.json"))
    parser.add_argument("--conversation", default="30", help="LoCoMo file stem")
    args = parser.parse_args(argv)
    [path] = [p for p in conversation_files() if p.stem == args.conversation]
    result = asyncio.run(run(path))
    write_report(args.out, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
