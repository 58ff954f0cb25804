"""A worker killed in the middle of a rebuild restarts and ends with the tree an
uninterrupted rebuild writes, node by node, versions and Qdrant payloads included.

Both runs build the crash rig's input (`crash_rig.synthetic_log`) with `memstream worker`,
stop it, publish `rebuild.v1` for the kept user and start the worker again with a new prompt
version and chunks of four leaves. The killed run's worker SIGKILLs itself when it reaches
`rebuild.before_commit` the third time (the plan and a chunk committed, the second chunk's
leaves indexed, the chunk and the job's progress not), and is started again without the fault point.
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from memstream.adapters.qdrant.query import node_from_payload
from memstream.adapters.redis.tree import RedisTree
from memstream.contracts.codec import encode_rebuild
from memstream.recall.rebuilds import rebuild_progress
from memstream.settings import Settings

from .crash_rig import (
    KEPT,
    Snapshot,
    Worker,
    differences,
    publish,
    scenario_settings,
    snapshot,
    synthetic_log,
    wait_settled,
)

pytestmark = [pytest.mark.integration, pytest.mark.crash]

UPGRADED = {"MEMSTREAM_PROMPT_VERSION": "crash-2", "MEMSTREAM_REBUILD_CHUNK_LEAVES": "4"}
KILL_POINT = "rebuild.before_commit:3"  # the plan, a chunk, and in the second chunk


async def wait_rebuilt(
    settings: Settings, worker: Worker, rebuild_id: str, timeout_s: float = 120
) -> None:
    tree = RedisTree(aioredis.from_url(settings.redis.url), settings.redis.namespace)
    deadline = time.monotonic() + timeout_s
    try:
        while (await rebuild_progress(tree, KEPT, rebuild_id)).status != "done":
            if worker.proc.poll() is not None:
                raise RuntimeError(f"worker exited ({worker.proc.returncode})\n{worker.tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"rebuild not done after {timeout_s:.0f} s\n{worker.tail()}")
            await asyncio.sleep(0.5)
    finally:
        await tree._r.aclose()


async def rebuild_run(
    stack: Settings, root: Path, name: str, fault_point: str = ""
) -> tuple[Snapshot, Snapshot]:
    """The tree before the rebuild and after it."""
    settings = await scenario_settings(stack, root, name)
    await publish(settings, synthetic_log())
    worker = Worker(settings)
    await wait_settled(settings, worker)
    await worker.stop(signal.SIGTERM)
    before = await snapshot(settings)

    rebuild_id = f"rebuild-{name}"
    await publish(settings, [(KEPT, encode_rebuild(KEPT, rebuild_id))])
    if fault_point:
        doomed = Worker(settings, fault_point=fault_point, extra=UPGRADED)
        code = await doomed.exited(timeout_s=120)
        assert code == -signal.SIGKILL, f"exit {code}, never reached?\n{doomed.tail()}"
    worker = Worker(settings, extra=UPGRADED)
    await wait_rebuilt(settings, worker, rebuild_id)
    await wait_settled(settings, worker)
    await worker.stop(signal.SIGTERM)
    return before, await snapshot(settings)


async def test_a_worker_killed_mid_rebuild_ends_with_the_tree_of_an_uninterrupted_one(
    stack_settings: Settings, tmp_path: Path
) -> None:
    (before, clean), (_, killed) = await asyncio.gather(
        rebuild_run(stack_settings, tmp_path, "rebuild-clean"),
        rebuild_run(stack_settings, tmp_path, "rebuild-killed", KILL_POINT),
    )
    kept = {i: v for i, v in before.nodes.items() if v[0] == KEPT}
    assert {v[1] for v in kept.values()} == {1, 2, 3, 4, 5}
    # Every node written again once, the tree's shape (levels, sources, parents) kept.
    assert {i: v[2] for i, v in clean.nodes.items()} == {i: v[2] + 1 for i, v in kept.items()}
    assert {i: v[4:] for i, v in clean.nodes.items()} == {i: v[4:] for i, v in kept.items()}
    derived = [node_from_payload(i, p).derivation for i, p in clean.payloads.items()]
    assert {d.prompt_version if d else None for d in derived} == {"crash-2"}
    assert differences(clean, killed) == []
