"""CPU per message of memstream's own work on the write path, without Faust or the model.

    python -m memstream_lab.bench.loop_work --out bench-results/loop-work.json

The ingest benchmark's `event_loop` figure mixes memstream's work with Faust's per-record
machinery, the benchmark's publisher and whatever the load does to both. This one runs, in
one process and stage by stage over the same LoCoMo messages, only the per-message work the
segmenter does in the event loop: decoding and validating each record, the window reducer,
the L1 nodes (offline text), the memories events, the lexical vectors, the Qdrant points
(built and converted for qdrant-edge, then upserted into a real edge shard) and the Redis
commits of the nodes (a real Redis, `--redis-url`; its keys are removed at the end). With
the knowledge write on (`MEMSTREAM_KNOWLEDGE`), the segmenter also reads each L1's facts and
entity surfaces (`knowledge`) and commits them with it (`redis_commits_with_knowledge`, in
place of `redis_commits`): `total_cpu_ms_per_msg` is the work with it off, and
`total_with_knowledge_cpu_ms_per_msg` with it on. Each
stage's figure is the least CPU time of `--repeats` runs, which other load moves far less
than a rate. To compare two checkouts, run this file with each one's code on the path (it
falls back to what an older checkout has where an API is newer, doing what its segmenter
did: validating with `validate`, adding the derivation with `replace`).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from memstream.adapters.llm.offline import OfflineLanguageModel
from memstream.adapters.qdrant import edge_translation
from memstream.adapters.qdrant.edge import EdgeIndex
from memstream.adapters.redis.tree import RedisTree
from memstream.contracts.catalog import load_catalog, parse_json
from memstream.contracts.codec import decode_input, encode_state, memory_event
from memstream.domain import ids
from memstream.domain.derivation import Derivation
from memstream.domain.knowledge import KnowledgeChange, cleared, knowledge_change
from memstream.domain.models import IndexedMemory, InputEvent, MemoryNode, SessionEnded, Turn
from memstream.domain.nodes import segment_node
from memstream.domain.sparse import document_vector
from memstream.domain.windows import SegmentReady, UserWindows, WindowRules, apply, initial_state
from memstream.ports import UserCommit
from memstream_lab.locomo import conversation_events, conversation_files, load_conversation
from memstream_lab.measure import write_report

DERIVATION = Derivation("offline", "rules", "bench", "local:all-MiniLM-L6-v2:onnx-int8:384")
STEP = 64  # nodes per upsert and per commit, as a consume step of that many exchanges
DIM = 384


def _records(conversations: int) -> list[bytes]:
    files = conversation_files()[:conversations]
    return [
        json.dumps(e).encode()
        for path in files
        for e in conversation_events(load_conversation(path))
    ]


def _decode_all(records: list[bytes]) -> list[InputEvent]:
    spec = load_catalog("").turns
    validate = getattr(spec, "validate_parsed", spec.validate)
    events = []
    for raw in records:
        value, problem = parse_json(raw)
        if problem is not None or validate(value):
            raise ValueError(f"invalid record: {raw[:80]!r}")
        assert isinstance(value, dict)
        events.append(decode_input(value))
    return events


def _reduce(events: list[InputEvent]) -> list[tuple[str, SegmentReady]]:
    clear = getattr(ids.window_node_id, "cache_clear", None)
    if clear is not None:
        clear()  # cold, as a worker that just started
    now, rules = datetime.now(UTC), WindowRules()
    states: dict[str, UserWindows] = {}
    ready: list[tuple[str, SegmentReady]] = []
    for event in events:
        if not isinstance(event, Turn | SessionEnded):
            continue
        state = states.get(event.user_id) or initial_state(event.user_id, "UTC")
        states[event.user_id], outputs = apply(state, event, now, rules)
        ready += [(event.user_id, o) for o in outputs if isinstance(o, SegmentReady)]
    return ready


async def _nodes(ready: list[tuple[str, SegmentReady]]) -> list[MemoryNode]:
    llm = OfflineLanguageModel()
    derived = "derivation" in inspect.signature(segment_node).parameters
    nodes = []
    for user, segment in ready:
        summary = await llm.write_segment(segment.messages, [])
        if derived:
            nodes.append(segment_node(user, segment, summary, DERIVATION))
        else:
            nodes.append(replace(segment_node(user, segment, summary), derivation=DERIVATION))
    return nodes


def _point_maker() -> Callable[[IndexedMemory], object]:
    """What builds a qdrant-edge point of a memory in this checkout (before
    `edge_memory_point`, the qdrant-client point translated)."""
    made = getattr(edge_translation, "edge_memory_point", None)
    if made is not None:
        return made
    from memstream.adapters.qdrant.query import memory_point

    translate = edge_translation.edge_point  # type: ignore[attr-defined]
    return lambda m: translate(memory_point(m))


async def measure(conversations: int, repeats: int, redis_url: str) -> dict[str, Any]:
    records = _records(conversations)
    events = _decode_all(records)
    nodes = await _nodes(_reduce(events))
    unit = [1.0 / DIM**0.5] * DIM  # the vectors' values do not change the work
    memories = [IndexedMemory(n, unit, document_vector(n.text)) for n in nodes]
    steps = [memories[i : i + STEP] for i in range(0, len(memories), STEP)]
    client = aioredis.Redis.from_url(redis_url)
    namespace = f"bench-loop-work-{uuid.uuid4().hex[:8]}"
    tree = RedisTree(client, namespace=namespace)
    state = encode_state(initial_state("bench", "UTC"))
    with tempfile.TemporaryDirectory(prefix="memstream-loop-work-") as scratch:
        index = EdgeIndex.open(Path(scratch) / "shard", DIM)
        await index.ensure_collection()

        point = _point_maker()

        async def points() -> None:
            for step in steps:
                [point(m) for m in step]

        async def upserts() -> None:
            for step in steps:
                await index.upsert(step)

        by_user = [
            (user, [m.node for m in step if m.node.user_id == user])
            for step in steps
            for user in sorted({m.node.user_id for m in step})
        ]
        # As the segmenter decides it, off (`cleared`: a first write clears nothing) and on.
        changes_off = [cleared(mine) for _, mine in by_user]
        changes_on = [knowledge_change(mine) for _, mine in by_user]

        async def commits_with(changes: list[KnowledgeChange]) -> None:
            for (user, mine), change in zip(by_user, changes, strict=True):
                await tree.commit_user(
                    UserCommit(
                        user,
                        state=state,
                        seen={},
                        nodes=mine,
                        outbox=[],
                        due=None,
                        knowledge=change,
                    )
                )

        async def run_sync(work: Callable[[], object]) -> None:
            work()

        stages: dict[str, Callable[[], Awaitable[object]]] = {
            "decode_and_validate": lambda: run_sync(lambda: _decode_all(records)),
            "reducer": lambda: run_sync(lambda: _reduce(events)),
            "l1_nodes": lambda: _nodes(_reduce(events)),
            "memories_events": lambda: run_sync(
                lambda: [json.dumps(memory_event(n)) for n in nodes]
            ),
            "lexical_vectors": lambda: run_sync(lambda: [document_vector(n.text) for n in nodes]),
            "qdrant_points": points,
            "qdrant_upserts": upserts,  # points again, and the shard's own work (threads)
            "redis_commits": lambda: commits_with(changes_off),
            "knowledge": lambda: run_sync(lambda: [knowledge_change(m) for _, m in by_user]),
            "redis_commits_with_knowledge": lambda: commits_with(changes_on),
        }
        least: dict[str, float] = {}
        try:
            for _ in range(repeats):
                for name, stage in stages.items():
                    started = time.process_time()  # every thread: the shard's count too
                    await stage()
                    spent = time.process_time() - started
                    least[name] = min(least.get(name, spent), spent)
        finally:
            await index.close()
            async for key in client.scan_iter(match=f"{namespace}:*"):
                await client.delete(key)
            await client.aclose()
    # The reducer runs again inside l1_nodes: count it once.
    least["l1_nodes"] = max(0.0, least["l1_nodes"] - least["reducer"])
    turns = sum(isinstance(e, Turn) for e in events)
    per_message = {k: round(1000 * v / turns, 4) for k, v in least.items()}
    off = set(per_message) - {"qdrant_points", "knowledge", "redis_commits_with_knowledge"}
    on = off - {"redis_commits"} | {"knowledge", "redis_commits_with_knowledge"}
    return {
        "benchmark": "loop_work",
        "messages": turns,
        "l1_nodes": len(nodes),
        "repeats": repeats,
        "cpu_ms_per_msg": per_message,
        # qdrant_upserts includes qdrant_points: the sum counts the points once.
        "total_cpu_ms_per_msg": round(sum(v for k, v in per_message.items() if k in off), 4),
        "total_with_knowledge_cpu_ms_per_msg": round(
            sum(v for k, v in per_message.items() if k in on), 4
        ),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench-results/loop-work.json"))
    parser.add_argument("--conversations", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args(argv)
    result = asyncio.run(measure(args.conversations, args.repeats, args.redis_url))
    write_report(args.out, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
