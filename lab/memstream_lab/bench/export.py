"""Export and import of a 5,000-message user: time, file size, and the round trip's equality.

    python -m memstream_lab.bench.export --out bench-results/export.json

The user is built through the stores' adapters, not the broker: the LoCoMo conversations
replayed one after the other, a year apart each (as `bench forget` sends them), until
`--messages` messages; each pair of messages of a session an L1, each session an L2, its
days, ISO weeks and months L3-L5 (UTC), every text written by the offline backend and each
L1's facts and entities read by the rules, committed with the workers' own commits
(`commit_user`, `commit_nodes`). Building it this way takes a fraction of the write path's
time and gives the same kinds of nodes, texts and facts (a message a LoCoMo session leaves
unpaired is an L1 of its own, as the segmenter makes it).

Then, on the embedded stack (Redis, the in-process Qdrant engine, the configured embedder):
the user is exported to a file (timed, with the Python memory it held at its peak,
traced in a second, untimed export), forgotten, imported from the file (timed: the
embedder's work is most of it), and exported again; the two files must be equal but for
`exported_at`.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import tempfile
import time
import tracemalloc
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memstream.backup.export import export_records
from memstream.backup.restore import PAGE as IMPORT_PAGE
from memstream.backup.restore import import_records
from memstream.backup.vectors import embedded_texts
from memstream.bootstrap import Container, connect
from memstream.contracts.backup_format import NodeRecord, Record, encode_record, read_records
from memstream.contracts.codec import encode_state, parse_ts
from memstream.domain.calendar import window_for
from memstream.domain.ids import window_node_id
from memstream.domain.knowledge import knowledge_change
from memstream.domain.models import Level, MemoryNode, StoredNode, Turn, Window, WindowClosed
from memstream.domain.nodes import fingerprint, segment_node, window_node
from memstream.domain.windows import SegmentReady, UserWindows
from memstream.entrypoints.embedded.stack import EmbeddedStack
from memstream.ports import UserCommit
from memstream.settings import Settings
from memstream.wiring.handlers import derivation, embedder_id
from memstream_lab.locomo import conversation_events, conversation_files, load_conversation
from memstream_lab.measure import write_report

USER = "bench-export"
PAGE = 500
BASE = datetime(2010, 1, 1, tzinfo=UTC)  # each replay of a conversation gets its own year


def history(messages: int) -> Iterator[dict[str, Any]]:
    """The turns of the LoCoMo conversations in turn, each moved to a year of its own, ids
    made unique per replay, until `messages` turns (as `bench forget` replays them)."""
    conversations = [
        conversation_events(load_conversation(path), USER) for path in conversation_files()
    ]
    sent = 0
    for slot in itertools.count():
        events = conversations[slot % len(conversations)]
        shift = BASE + timedelta(days=365 * slot) - parse_ts(events[0]["ts"])
        for event in events:
            if event["type"] != "turn.v1":
                continue
            if sent == messages:
                return
            sent += 1
            yield event | {
                "event_id": f"y{slot}-{event['event_id']}",
                "session_id": f"y{slot}-{event['session_id']}",
                "ts": (parse_ts(event["ts"]) + shift).isoformat(),
            }


def turns(messages: int) -> Iterator[Turn]:
    for event in history(messages):
        yield Turn(
            event_id=event["event_id"],
            user_id=USER,
            session_id=event["session_id"],
            seq=int(event["seq"]),
            speaker=event["speaker"],
            role=event.get("role", "other"),
            text=event["text"],
            ts=parse_ts(event["ts"]),
        )


def sessions(messages: int) -> list[list[Turn]]:
    by_session: dict[str, list[Turn]] = defaultdict(list)
    for turn in turns(messages):
        by_session[turn.session_id].append(turn)
    return list(by_session.values())


async def build_user(container: Container, messages: int) -> dict[str, int]:
    """Write the user's tree through the stores' commits, level by level; nodes per level."""
    settings, tree, llm = container.settings, container.tree, container.llm
    made = derivation(settings)
    state = encode_state(UserWindows(USER, "UTC"))
    counts: dict[str, int] = {}
    children: dict[str, list[MemoryNode]] = defaultdict(list)
    windows: dict[str, Window] = {}
    leaves: list[MemoryNode] = []
    for session in sessions(messages):
        window = Window(USER, Level.SESSION, session[0].ts, session[-1].ts, session[0].session_id)
        node_id = window_node_id(USER, Level.SESSION, window.start, window.session_id)
        windows[node_id] = window
        for at in range(0, len(session), 2):
            pair = session[at : at + 2]
            summary = await llm.write_segment(pair, leaves[-3:])
            leaf = segment_node(USER, SegmentReady(tuple(pair), node_id), summary, made)
            leaves.append(leaf)
            children[node_id].append(leaf)
    for first in range(0, len(leaves), PAGE):
        page = leaves[first : first + PAGE]
        await tree.commit_user(
            UserCommit(USER, state, nodes=page, knowledge=knowledge_change(page))
        )
    counts["L1"] = len(leaves)
    for level in (Level.SESSION, Level.DAY, Level.WEEK, Level.MONTH):
        above: dict[str, list[MemoryNode]] = defaultdict(list)
        written: list[StoredNode] = []
        for node_id, kids in children.items():
            window = windows[node_id]
            parent = None
            if level < Level.MONTH:
                start, end = window_for(Level(level + 1), kids[0].t_start, "UTC")
                parent = window_node_id(USER, Level(level + 1), start)
                windows[parent] = Window(USER, Level(level + 1), start, end)
            summary = await llm.consolidate(level, window, kids, [])
            closure = WindowClosed(window, "clock", node_id, parent)
            node = replace(window_node(closure, kids, summary, 1), derivation=made)
            written.append(StoredNode(node, fingerprint(kids, made)))
            if parent is not None:
                above[parent].append(node)
        for first in range(0, len(written), PAGE):
            await tree.commit_nodes(USER, written[first : first + PAGE], outbox=[])
        counts[level.label] = len(written)
        children = above
    return counts


async def export_to(container: Container, path: Path) -> int:
    lines = 0
    with path.open("w", encoding="utf-8") as sink:
        async for record in export_records(container.tree, USER, "bench"):
            sink.write(encode_record(record))
            lines += 1
    return lines


async def traced_export_peak(container: Container) -> int:
    """The Python memory an export holds at its peak (bytes), its lines thrown away."""
    tracemalloc.start()
    try:
        async for record in export_records(container.tree, USER, "bench"):
            encode_record(record)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def embedder_alone(container: Container, path: Path) -> float:
    """Seconds the embedder takes over the texts an import of `path` embeds, page by page."""
    nodes = [
        r.stored.node
        for r in read_records(path.open(encoding="utf-8"))
        if isinstance(r, NodeRecord)
    ]
    started = time.perf_counter()
    for first in range(0, len(nodes), IMPORT_PAGE):
        page = nodes[first : first + IMPORT_PAGE]
        await container.embedder.embed([t for n in page for t in embedded_texts(n)])
    return time.perf_counter() - started


def without_time(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    del header["exported_at"]
    return [json.dumps(header), *lines[1:]]


async def run(messages: int) -> dict[str, Any]:
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="memstream-bench-export-") as scratch:
        settings = Settings(data_dir=Path(scratch) / "data")
        async with AsyncExitStack() as running:
            stack = await running.enter_async_context(EmbeddedStack(settings))
            served = stack.settings()
            container = await running.enter_async_context(connect(served, producer=False))
            started = time.perf_counter()
            nodes = await build_user(container, messages)
            built_s = time.perf_counter() - started

            first = Path(scratch) / "first.jsonl"
            started = time.perf_counter()
            lines = await export_to(container, first)
            export_s = time.perf_counter() - started
            peak = await traced_export_peak(container)

            await container.forget_user(USER)
            # Each model process loads (the graph is prepared on a first run) on its first
            # call: a bulk call reaches them all, so the import times only its own work.
            await container.embedder.embed([f"warm up {i}" for i in range(512)])

            def records() -> Iterator[Record]:
                return read_records(first.open(encoding="utf-8"))

            started = time.perf_counter()
            imported = await import_records(
                records,
                container.tree,
                container.index,
                container.embedder,
                embedder_id=embedder_id(served),
            )
            import_s = time.perf_counter() - started
            embed_alone_s = await embedder_alone(container, first)
            second = Path(scratch) / "second.jsonl"
            await export_to(container, second)
            equal = without_time(first) == without_time(second)
            indexed = await container.index.count(USER)
            size = first.stat().st_size
    sent = sum(len(s) for s in sessions(messages))
    return {
        "benchmark": "export",
        "messages": sent,
        "nodes": nodes,
        "build_seconds": round(built_s, 1),
        "file": {"lines": lines, "bytes": size, "mb": round(size / 1e6, 2)},
        "export": {
            "seconds": round(export_s, 2),
            "messages_per_s": round(sent / export_s),
            "python_peak_mb": round(peak / 1e6, 1),
        },
        "import": {
            "seconds": round(import_s, 2),
            "messages_per_s": round(sent / import_s),
            "nodes": imported.nodes,
            "facts": imported.facts,
            "embedder": embedder_id(served),
            # The same texts in the same pages through the embedder alone: the import's floor.
            "embedder_alone_seconds": round(embed_alone_s, 2),
            "ratio_to_embedder_alone": round(embed_alone_s / import_s, 3),
        },
        "round_trip_equal": equal,
        "points_indexed": indexed,
        "when": datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": {
            "python": platform.python_version(),
            "cpus": len(os.sched_getaffinity(0)),
            "loadavg_1m_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        },
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench-results/export.json"))
    parser.add_argument("--messages", type=int, default=5000)
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.messages))
    write_report(args.out, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
