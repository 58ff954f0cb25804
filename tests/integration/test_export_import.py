"""A user's memory exported and imported on the embedded stack (issue #36, point 3).

A small conversation (two sessions on two days, with facts and a message deadline) goes
through the real broker and workers into Redis and Qdrant; it is exported, the user is
forgotten, the file imported and exported again: the two files are the same but for the
time they were written, and recall answers the same questions the same way. The same file
again changes nothing, a user with other memory is refused without `--replace`, and the
tree imported under another id is the one the pipeline would have named for it.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.unit.contracts.test_backup_format import USER as SMALL_USER
from tests.unit.contracts.test_backup_format import records as small_user
from typer.testing import CliRunner

from memstream.backup.export import export_records
from memstream.backup.renaming import rule_id
from memstream.backup.restore import Imported, UserHasMemory, import_records
from memstream.bootstrap import Container
from memstream.contracts.backup_format import NodeRecord, Record, encode_record, read_records
from memstream.domain.models import Level
from memstream.entrypoints.cli import app
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.recall.pipeline import RecallRequest
from memstream.wiring.handlers import build_recall, embedder_id

from .test_forget_message import qdrant_points, runtime

__all__ = ["runtime"]

USER = "export-ana"
START = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)
QUESTIONS = ("Where does Ana live?", "What did Ana's sister do?", "Which hobby did Ana start?")


def conversation() -> list[dict[str, Any]]:
    days = [
        [
            ("I live in Lisbon and I love the sea.", "Lisbon is bright."),
            ("I started a pottery class this week.", "Pottery is a calm hobby."),
        ],
        [
            ("My sister moved to Porto for work.", "Porto has lovely tiles."),
            ("I ran ten kilometres this morning.", "That is a good pace."),
        ],
    ]
    events: list[dict[str, Any]] = []
    for day, exchanges in enumerate(days):
        at = START + timedelta(days=day)
        for i, (question, answer) in enumerate(exchanges):
            for j, (role, text) in enumerate((("user", question), ("assistant", answer))):
                events.append({
                    "type": "turn.v1", "event_id": f"d{day}-{'qa'[j]}{i}", "user_id": USER,
                    "session_id": f"s{day}", "seq": 2 * i + j,
                    "speaker": "Ana" if role == "user" else "Bot", "role": role, "text": text,
                    "ts": (at + timedelta(minutes=2 * i + j)).isoformat(),
                })  # fmt: skip
        events.append({
            "type": "session_end.v1", "user_id": USER, "session_id": f"s{day}",
            "ts": (at + timedelta(minutes=10)).isoformat(),
        })  # fmt: skip
    # A deadline far ahead: the file carries it, and the import schedules it again.
    events[0]["expires_at"] = (datetime.now(UTC) + timedelta(days=365)).isoformat()
    return events


async def exported(rt: Container, user_id: str = USER) -> list[str]:
    return [encode_record(r) async for r in export_records(rt.tree, user_id, "test")]


def without_time(lines: list[str]) -> list[str]:
    header = json.loads(lines[0])
    del header["exported_at"]
    return [json.dumps(header) + "\n", *lines[1:]]


async def answers(rt: Container) -> list[list[tuple[str, int, str, float]]]:
    """What recall answers each question: the memories in order, each with its score."""
    pipeline = build_recall(rt).pipeline
    replies = []
    for question in QUESTIONS:
        result = await pipeline.recall(RecallRequest(USER, question, complexity="complex"))
        replies.append(
            [(m.node.id, m.node.version, m.node.text, round(m.score, 6)) for m in result.memories]
        )
    return replies


def vectors_of(points: dict[str, Any]) -> dict[str, tuple[list[float], Any]]:
    """Each point's dense vector and its lexical one (indices and weights)."""
    found = {}
    for point_id, record in points.items():
        dense, lexical = record.vector["dense"], record.vector["lexical"]
        found[point_id] = (list(dense), (list(lexical.indices), list(lexical.values)))
    return found


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


async def imported(rt: Container, lines: list[str], **options: Any) -> Imported:
    def records() -> Iterator[Record]:
        return read_records(lines)

    return await import_records(
        records, rt.tree, rt.index, rt.embedder, embedder_id=embedder_id(rt.settings), **options
    )


async def test_an_export_imported_after_a_forget_is_the_same_memory(
    runtime: Container, tmp_path: Path
) -> None:
    path = tmp_path / "conversation.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in conversation()))
    started = asyncio.Event()
    async with run_parts(runtime, WRITE_PATH, fast_rebalance=True, on_started=started.set):
        await asyncio.wait_for(started.wait(), 60)
        await publish_file(
            path, catalog=runtime.catalog, bootstrap=runtime.settings.broker.bootstrap,
            show_progress=False,
        )  # fmt: skip
        await wait_caught_up(runtime, [USER], timeout_s=120)
    first = await exported(runtime)
    kinds = [json.loads(line)["type"] for line in first]
    assert kinds[:3] == ["header", "state", "expiry"] and kinds[-1] == "end"
    counts = json.loads(first[-1])["counts"]
    assert all(counts[level.label] >= 1 for level in Level)
    assert counts["facts"] >= 1 and counts["expiries"] == 1
    before = await answers(runtime)
    assert all(before)
    ids = [json.loads(line)["node"]["id"] for line in first if '"type": "node"' in line]
    vectors = vectors_of(await qdrant_points(runtime, ids))

    await runtime.forget_user(USER)
    assert await runtime.index.count(USER) == 0
    result = await imported(runtime, first)
    assert (result.nodes, result.expiries, result.replaced) == (
        sum(counts[level.label] for level in Level), 1, False,
    )  # fmt: skip
    assert result.other_embedder == 0
    second = await exported(runtime)
    assert without_time(second) == without_time(first)
    assert await runtime.index.count(USER) == result.nodes
    # The index holds the vectors the workers made, embedded again: the same lexical ones,
    # dense ones as near as the model gives (the int8 model quantises a batch's activations
    # by that batch's range, and the import embeds other batches than the workers did; one
    # text's two vectors were measured as far apart as 0.9888, so the bound leaves room).
    again_vectors = vectors_of(await qdrant_points(runtime, ids))
    assert again_vectors.keys() == vectors.keys()
    for point_id, (dense, sparse) in vectors.items():
        assert again_vectors[point_id][1] == sparse
        assert cosine(again_vectors[point_id][0], dense) > 0.98
    after = await answers(runtime)
    # The same memories in the same order, their scores as near as their vectors.
    assert [[m[:3] for m in a] for a in after] == [[m[:3] for m in b] for b in before]
    for a, b in zip(after, before, strict=True):
        assert [m[3] for m in a] == pytest.approx([m[3] for m in b], abs=0.01)

    # Twice is once; a user whose memory is not the file's is refused, unless replacing.
    again = await imported(runtime, first)
    assert again.repeated and without_time(await exported(runtime)) == without_time(first)
    changed = list(first)
    at = kinds.index("node")
    node = json.loads(changed[at])
    node["node"]["version"] += 1
    changed[at] = json.dumps(node, ensure_ascii=False) + "\n"
    with pytest.raises(UserHasMemory):
        await imported(runtime, changed)
    replaced = await imported(runtime, changed, replace=True)
    assert replaced.replaced
    assert without_time(await exported(runtime)) == without_time(changed)


async def test_a_tree_imported_under_another_id_has_the_ids_the_pipeline_gives_it(
    runtime: Container,
) -> None:
    started = asyncio.Event()
    file = Path(runtime.settings.data_dir) / "conversation.jsonl"
    file.write_text("".join(json.dumps(e) + "\n" for e in conversation()))
    async with run_parts(runtime, WRITE_PATH, fast_rebalance=True, on_started=started.set):
        await asyncio.wait_for(started.wait(), 60)
        await publish_file(
            file, catalog=runtime.catalog, bootstrap=runtime.settings.broker.bootstrap,
            show_progress=False,
        )  # fmt: skip
        await wait_caught_up(runtime, [USER], timeout_s=120)
    first = await exported(runtime)
    result = await imported(runtime, first, user_id="export-bruno")
    assert result.not_reproduced == 0
    copy = [json.loads(line) for line in await exported(runtime, "export-bruno")]
    nodes = [line["node"] for line in copy if line["type"] == "node"]
    assert len(nodes) == sum(json.loads(first[-1])["counts"][level.label] for level in Level)
    ids = {n["id"] for n in nodes}
    originals = {json.loads(line)["node"]["id"] for line in first if '"node"' in line}
    assert not ids & originals
    for record in read_records(await exported(runtime, "export-bruno")):
        if isinstance(record, NodeRecord):
            node = record.stored.node
            assert rule_id(node, "export-bruno") == node.id
            assert node.parent_id is None or node.parent_id in ids
    facts = [f for line in copy for f in line.get("facts", ())]
    assert facts and {f["user_id"] for f in facts} == {"export-bruno"}


async def test_the_commands_write_the_file_and_refuse_an_unknown_version(
    runtime: Container, tmp_path: Path
) -> None:
    lines = [encode_record(r) for r in small_user()]  # built by hand: no workers needed
    await imported(runtime, lines)
    env = {
        "MEMSTREAM_REDIS_URL": runtime.settings.redis.url,
        "MEMSTREAM_REDIS_NAMESPACE": runtime.settings.redis.namespace,
    }
    out = tmp_path / "ana.jsonl"
    export = ["export", "--user", SMALL_USER, "--out", str(out)]
    result = await asyncio.to_thread(CliRunner().invoke, app, export, env=env)
    assert result.exit_code == 0, result.output
    written = out.read_text().splitlines(keepends=True)
    assert written[1:] == lines[1:]  # the header is this memstream's, with every level counted
    assert json.loads(written[0])["counts"] == {
        "L1": 1, "L2": 1, "L3": 0, "L4": 0, "L5": 0, "expiries": 1
    }  # fmt: skip

    header = json.loads(lines[0]) | {"version": 99}
    future = tmp_path / "future.jsonl"
    future.write_text("".join([json.dumps(header) + "\n", *lines[1:]]))
    result = await asyncio.to_thread(CliRunner().invoke, app, ["import", str(future)], env=env)
    assert result.exit_code == 2
    assert "line 1: format version 99" in result.output

    nobody = ["export", "--user", "nobody", "--out", str(tmp_path / "nobody.jsonl")]
    result = await asyncio.to_thread(CliRunner().invoke, app, nobody, env=env)
    assert result.exit_code == 1 and "no memory stored" in result.output
    assert not (tmp_path / "nobody.jsonl").exists()


class CrashingStore:
    """The tree store, but the process dies at the consolidator's first commit."""

    def __init__(self, tree: Any) -> None:
        self._tree = tree

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tree, name)

    async def commit_nodes(self, *args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("killed")


async def test_an_import_cut_short_is_finished_by_running_it_again(runtime: Container) -> None:
    lines = [encode_record(r) for r in small_user()]

    def records() -> Iterator[Record]:
        return read_records(lines)

    with pytest.raises(RuntimeError, match="killed"):
        await import_records(records, CrashingStore(runtime.tree), runtime.index, runtime.embedder)
    half = await exported(runtime, SMALL_USER)
    assert sum('"type": "node"' in line for line in half) == 1  # the L1 only
    finished = await imported(runtime, lines)
    assert finished.repeated
    assert (await exported(runtime, SMALL_USER))[1:] == lines[1:]
