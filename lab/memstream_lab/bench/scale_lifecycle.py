"""The scale benchmark's probes of the heavy user's lifecycle: consolidating its latest day,
week and month again, rebuilding its whole tree, forgetting it; each with its time and memory.

The handlers are the real ones (`Consolidator`, `Segmenter` with its `Rebuilder`) on the
container's stores, with the hashing embedder in place of the model (as `scale_probe`: the
model's cost per text does not depend on the history) and a derivation of their own
(`PROBE_PROMPT`), so the fingerprints differ from the fill's and every node reached is
written again instead of passed over as current. The rebuild is driven here as the
scheduler would drive it (the same `rebuild.v1` again for every chunk, until the job is
finished), and the windows its last chunk names are consolidated here in batches, as the
consolidator consuming the windows topic would; nothing waits on the broker.

Memory: the process's resident memory sampled every `SAMPLE_S` during the work (its peak
over the level before), and Redis's `used_memory` before and after. The embedded Qdrant
shard lives in this process, so its share is in the process's figure.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, TypeVar

from memstream.adapters.embedding.embedders import HashingEmbedder
from memstream.bootstrap import Container
from memstream.consolidator.handler import Consolidator
from memstream.contracts.codec import decode_input
from memstream.contracts.records import Consumed, RawEvent
from memstream.domain.derivation import Derivation
from memstream.domain.models import Level
from memstream.domain.windows import late_data_closures
from memstream.segmenter.handler import Segmenter
from memstream.wiring.handlers import build_consolidator, build_segmenter, derivation
from memstream_lab.bench.scale_bytes import rss_bytes

T = TypeVar("T")
PROBE_PROMPT = "scale-probe"
REBUILD_CHUNK = 512  # leaves a chunk: the deployment's default (16) would ask 6,000 chunks
CONSOLIDATE_BATCH = 64  # closures a consolidator batch, as one poll of the windows topic
SAMPLE_S = 0.05
WINDOW_LEVELS = (Level.DAY, Level.WEEK, Level.MONTH)


def probe_derivation(c: Container) -> Derivation:
    """The deployment's derivation under another prompt version: every node looks stale."""
    base = derivation(c.settings) or Derivation("offline", "rules", "", "hashing:384")
    return replace(base, prompt_version=PROBE_PROMPT)


def probe_segmenter(c: Container) -> Segmenter:
    """The deployment's segmenter, bare, on the hashing embedder, in chunks of `REBUILD_CHUNK`."""
    return build_segmenter(
        c,
        embedder=HashingEmbedder(c.embedder.dim),
        derivation=probe_derivation(c),
        rebuild_chunk_leaves=REBUILD_CHUNK,
        bare=True,
    )


def probe_consolidator(c: Container) -> Consolidator:
    """The deployment's consolidator, bare, on the hashing embedder."""
    return build_consolidator(
        c, embedder=HashingEmbedder(c.embedder.dim), derivation=probe_derivation(c), bare=True
    )


async def with_memory(c: Container, work: Callable[[], Awaitable[T]]) -> tuple[T, dict[str, Any]]:
    """`work()`'s result, with its wall time, CPU and the memory it took."""
    before_rss = rss_bytes()
    peak = [before_rss]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(SAMPLE_S):
            peak[0] = max(peak[0], rss_bytes())

    sampler = threading.Thread(target=sample, daemon=True)
    redis_before = int((await c.tree._r.info("memory"))["used_memory"])
    sampler.start()
    began, cpu = time.perf_counter(), time.process_time()
    try:
        result = await work()
    finally:
        stop.set()
        sampler.join()
    spent = {
        "seconds": round(time.perf_counter() - began, 3),
        "cpu_seconds": round(time.process_time() - cpu, 3),
        "rss_peak_over_before_mb": round((peak[0] - before_rss) / 2**20, 1),
        "redis_used_memory_change_mb": round(
            (int((await c.tree._r.info("memory"))["used_memory"]) - redis_before) / 2**20, 1
        ),
    }
    return result, spent


async def consolidate_latest(c: Container, user_id: str) -> dict[str, Any]:
    """The consolidator's time for the user's latest day, week and month windows, each one
    consolidated again (its children read, a summary written, embedded, committed)."""
    consolidator = probe_consolidator(c)
    figures: dict[str, Any] = {}
    for level in WINDOW_LEVELS:
        newest = await c.tree.recent(user_id, level, 1)
        if not newest:
            figures[level.label] = None  # no window of the level closed yet (a young user)
            continue
        latest = newest[0]
        [closure] = late_data_closures([latest])
        children = len(await c.tree.children_ids(user_id, latest.id))
        again = functools.partial(consolidator.handle_batch, [closure])
        [outcome], spent = await with_memory(c, again)
        figures[level.label] = {
            "children": children,
            "written": outcome.node is not None and outcome.skipped is None,
            "ms": round(1000 * spent["seconds"], 2),
            "cpu_ms": round(1000 * spent["cpu_seconds"], 2),
        }
    return figures


def _rebuild_record(user_id: str, rebuild_id: str) -> Consumed[Any]:
    value = {"type": "rebuild.v1", "user_id": user_id, "rebuild_id": rebuild_id}
    return Consumed(decode_input(value), RawEvent(json.dumps(value).encode()))


async def rebuild_user(c: Container, user_id: str, budget_s: float = 0.0) -> dict[str, Any]:
    """Every leaf of the user derived again, then every window above consolidated again.
    With `budget_s`, the leaves stop being asked for once it has passed: the figures are then
    the rate of what was done and its extrapolation to the whole job, said as such."""
    segmenter, consolidator = probe_segmenter(c), probe_consolidator(c)
    rebuild_id = f"scale-probe-{time.time_ns()}"
    record = _rebuild_record(user_id, rebuild_id)
    job_bytes: list[int] = []
    job_key = f"{c.settings.redis.namespace}:{{{user_id}}}:rebuild"

    async def leaves() -> int:
        chunks = 0
        stop_at = time.perf_counter() + budget_s if budget_s > 0 else float("inf")
        while True:
            await segmenter.handle_batch([record])
            chunks += 1
            job_bytes.append(len(await c.tree._r.get(job_key) or b""))
            job = await c.tree.rebuild_job(user_id)
            if job is None or job.rebuild_id != rebuild_id or job.finished:
                return chunks
            if time.perf_counter() > stop_at:
                return chunks

    async def windows() -> int:
        ids = await c.tree.rebuild_windows(user_id)
        closures = late_data_closures(await c.tree.get_many(user_id, ids))
        for lo in range(0, len(closures), CONSOLIDATE_BATCH):
            await consolidator.handle_batch(closures[lo : lo + CONSOLIDATE_BATCH])
        return len(closures)

    chunks, leaf_spent = await with_memory(c, leaves)
    job = await c.tree.rebuild_job(user_id)
    figures: dict[str, Any] = {
        "leaves": job.leaf_count if job else 0,
        "leaves_done": job.done if job else 0,
        "leaves_rewritten": job.rewritten if job else 0,
        "chunk_leaves": REBUILD_CHUNK,
        "chunks": chunks,
        "job_document_bytes_max": max(job_bytes, default=0),
        "leaves_phase": leaf_spent,
    }
    if job is None or not job.finished:
        rate = figures["leaves_done"] / max(leaf_spent["seconds"], 1e-9)
        figures["leaves_per_s"] = round(rate, 1)
        figures["extrapolated_leaves_seconds"] = round(figures["leaves"] / max(rate, 1e-9), 1)
        return figures
    closures, window_spent = await with_memory(c, windows)
    figures["leaves_per_s"] = round(figures["leaves"] / max(leaf_spent["seconds"], 1e-9), 1)
    figures["windows"] = closures
    figures["windows_phase"] = window_spent
    figures["seconds"] = round(leaf_spent["seconds"] + window_spent["seconds"], 3)
    return figures


async def forget_user(c: Container, user_id: str) -> dict[str, Any]:
    """The API's forget of the user in both stores: what it removed, its time and memory."""
    removed, spent = await with_memory(c, lambda: c.forget_user(user_id))
    return {**spent, **removed}
