"""The crash suite: kill a real worker at each step of the write path, restart it, and find
the tree a clean run builds, node by node, versions included. The kills on either side of a
commit run again with the worker on a real Redis Cluster in cluster mode.

`memstream worker --role all` runs as a subprocess on the session's standalone broker and
Redis (Qdrant: its in-process engine, in the scenario's directory). Each scenario publishes
the same input (`crash_rig.synthetic_log`); a killed one runs with `MEMSTREAM_FAULT_POINT`,
so the worker SIGKILLs itself at an exact step, then is started again without it. The
kills on either side of a commit run once more with the input's users in a tenant that has a
turns topic of its own (`MEMSTREAM_TURNS_TOPIC_PER_TENANT`), and once with the local model
(the rest embed by hashing), whose int8 vectors decide the facts a message implies by its
frame. The scenarios run side by side to keep the suite short. Figures (kill points,
differences, restart-to-consuming seconds) are printed as one JSON line, `CRASH-SUITE {...}`.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from memstream.contracts.catalog import load_catalog
from memstream.settings import Settings

from .crash_rig import (
    CAST,
    GONE,
    KEPT,
    TENANT,
    TENANT_CAST,
    Cast,
    Snapshot,
    Worker,
    consuming_after,
    differences,
    publish,
    routing,
    scenario_settings,
    snapshot,
    synthetic_log,
    tree_of,
    wait_settled,
)
from .redis_cluster import RedisClusterNodes

pytestmark = [pytest.mark.integration, pytest.mark.crash]

# Changes told without a construction, by the day's index: the local model reads them by their
# frames (`domain.fact_frames`), a threshold on the message's vector.
FRAMED = {
    4: "First week at the new office of Brightline went great.",
    6: "First training with the Harbour Rowers tonight and my arms are gone.",
}
# Where each kill lands: the hit number puts it mid-input (batches of crash_rig.BATCH).
KILL_POINTS = {
    "l1": "l1.before_commit:3",
    "store-publish": "l1.before_publish:4",
    "consolidation": "consolidation.after_qdrant:3",
    "forget": "forget.after_redis:1",
}
# The kills on either side of a user's commit, run again on the Redis Cluster (the rest of
# the suite does not depend on the layout: one run of it is enough).
KILLED_MID_COMMIT = ("l1", "store-publish")
# A tenant share that sends the input through the overflow: the crash users are one tenant
# (no prefix), and every turn past its first over the share goes there, in batches of 4.
SHARE_ON = {
    "MEMSTREAM_SEGMENTER_TENANT_SHARE_TURNS_S": "0.01",
    "MEMSTREAM_SEGMENTER_TENANT_SHARE_BURST": "1",
    "MEMSTREAM_SEGMENTER_OVERFLOW_BATCH_SIZE": "4",
    "MEMSTREAM_SEGMENTER_OVERFLOW_LONGEST_WAIT_S": "0.2",
}


async def clean_run(
    stack: Settings,
    root: Path,
    cast: Cast = CAST,
    name: str = "clean",
    *,
    local: dict[str, str] | None = None,
) -> tuple[Snapshot, dict[str, Any]]:
    """`local`: the worker embeds with the local model (these settings), and the input holds
    changes told without a construction (`FRAMED`)."""
    settings = await scenario_settings(stack, root, name)
    await publish(settings, synthetic_log(cast, FRAMED if local else None))
    worker = Worker(settings, extra=local)
    first_start = await consuming_after(settings, worker)
    await wait_settled(settings, worker, cast=cast)
    await worker.stop(signal.SIGTERM)
    return await snapshot(settings, cast), timings(worker, first_start)


def timings(worker: Worker, to_consuming_s: float) -> dict[str, float]:
    """Seconds from (re)start to consuming, split into the process's own start-up (imports,
    connections) and the consumer group's wait (what membership settings govern); and the
    CPU seconds the start took (what compares across loads: six workers start at once)."""
    starting, joining = worker.joined_s()
    return {
        "to_consuming_s": round(to_consuming_s, 1),
        "process_start_s": round(starting, 1),
        "group_join_s": round(joining, 1),
        "start_cpu_s": worker.start_cpu_s(),
    }


async def killed_run(
    stack: Settings, root: Path, name: str, point: str
) -> tuple[Snapshot, dict[str, Any]]:
    settings = await scenario_settings(stack, root, name)
    return await killed_then_restarted(settings, point)


async def killed_then_restarted(
    settings: Settings, point: str, cast: Cast = CAST, *, local: dict[str, str] | None = None
) -> tuple[Snapshot, dict[str, Any]]:
    await publish(settings, synthetic_log(cast, FRAMED if local else None))
    doomed = Worker(settings, fault_point=point, extra=local)
    code = await doomed.exited(timeout_s=90)
    assert code == -signal.SIGKILL, f"{point}: exit {code}, never reached?\n{doomed.tail()}"
    worker = Worker(settings, extra=local)
    restart = await consuming_after(settings, worker)
    await wait_settled(settings, worker, cast=cast)
    await worker.stop(signal.SIGTERM)
    return await snapshot(settings, cast), {"kill_point": point} | timings(worker, restart)


async def killed_in_a_tenants_topic(
    stack: Settings, root: Path, name: str
) -> tuple[Snapshot, dict[str, Any], dict[str | None, dict[int, int]]]:
    """A kill at `KILL_POINTS[name]` with the input's users in `TENANT`, whose records go to
    a turns topic of its own; with the snapshot, the progress marks left per turns topic
    (None: the shared one)."""
    per_tenant = stack.model_copy(update={"turns_topic_per_tenant": TENANT})
    settings = await scenario_settings(per_tenant, root, f"tenant-{name}")
    snap, figures = await killed_then_restarted(settings, KILL_POINTS[name], TENANT_CAST)
    _, tenants = routing(settings).topics
    tree = tree_of(settings)
    try:
        partitions = range(load_catalog(settings.broker.topic_prefix).turns.partitions)
        marks = {
            None: await tree.progress(partitions),
            tenants: await tree.progress(partitions, tenants),
        }
    finally:
        await tree._r.aclose()
    return snap, figures, marks


async def graceful_restart(stack: Settings, root: Path) -> tuple[Snapshot, dict[str, Any]]:
    """SIGTERM as soon as the worker has committed progress; the input's last record (the
    forget) comes while it is down, so the restarted worker has something to consume."""
    settings = await scenario_settings(stack, root, "sigterm")
    log = synthetic_log()
    await publish(settings, log[:-1])
    worker = Worker(settings)
    await consuming_after(settings, worker)
    assert await worker.stop(signal.SIGTERM) == 0, worker.tail()
    await publish(settings, log[-1:])
    worker = Worker(settings)
    restart = await consuming_after(settings, worker)
    await wait_settled(settings, worker)
    await worker.stop(signal.SIGTERM)
    return await snapshot(settings), timings(worker, restart)


async def killed_in_the_overflow(stack: Settings, root: Path) -> Snapshot:
    """The input through the overflow (`SHARE_ON`), the worker killed once a batch of it is
    written and struck off the ledger but the overflow record that names it is not
    committed; restarted, it reads that record's records back from the turns log again."""
    settings = await scenario_settings(stack, root, "overflow")
    await publish(settings, synthetic_log())
    doomed = Worker(settings, fault_point="overflow.after_batch:3", extra=SHARE_ON)
    code = await doomed.exited(timeout_s=90)
    assert code == -signal.SIGKILL, f"exit {code}, never reached?\n{doomed.tail()}"
    tree = tree_of(settings)
    try:
        assert await tree.diverted(KEPT)  # killed with records still waiting
        worker = Worker(settings, extra=SHARE_ON)
        deadline = time.monotonic() + 120
        while await tree.diverted(KEPT) or await tree.diverted(GONE):
            assert time.monotonic() < deadline, worker.tail()
            await asyncio.sleep(0.2)
    finally:
        await tree._r.aclose()
    await wait_settled(settings, worker)
    await worker.stop(signal.SIGTERM)
    return await snapshot(settings)


async def test_a_worker_killed_in_the_overflow_restarts_to_the_tree_of_a_clean_run(
    stack_settings: Settings, tmp_path: Path
) -> None:
    """The overflow holds places in the turns log, not records: a kill between a batch's
    write and its commit replays the batch from the turns log, and the tree is the one a
    clean run without a share builds (the forgotten user's diverted turns dropped)."""
    (clean, _), through_overflow = await asyncio.gather(
        clean_run(stack_settings, tmp_path), killed_in_the_overflow(stack_settings, tmp_path)
    )
    assert {v[1] for v in clean.nodes.values()} == {1, 2, 3, 4, 5}  # every level closed
    assert differences(clean, through_overflow) == []


async def test_a_killed_worker_restarts_to_the_tree_of_a_clean_run(
    stack_settings: Settings, tmp_path: Path
) -> None:
    runs = await asyncio.gather(
        clean_run(stack_settings, tmp_path),
        graceful_restart(stack_settings, tmp_path),
        *(killed_run(stack_settings, tmp_path, n, p) for n, p in KILL_POINTS.items()),
    )
    (clean, clean_figures), (graceful, graceful_figures), *killed = runs
    assert (clean.points[GONE], clean.keys[GONE]) == (0, [])
    assert {v[1] for v in clean.nodes.values()} == {1, 2, 3, 4, 5}  # every level closed
    assert all(v[0] == KEPT for v in clean.nodes.values())
    facts, entities = clean.knowledge[KEPT]
    assert facts and entities and clean.knowledge[GONE] == ([], [])  # compared below
    report: dict[str, Any] = {"clean": clean_figures | {"nodes": len(clean.nodes)}}
    found = {"sigterm": differences(clean, graceful)}
    report["sigterm"] = graceful_figures | {"differences": len(found["sigterm"])}
    for name, (snap, figures) in zip(KILL_POINTS, killed, strict=True):
        found[name] = differences(clean, snap)
        report[name] = figures | {"differences": len(found[name])}
    print("CRASH-SUITE " + json.dumps(report))
    assert {name: diffs for name, diffs in found.items() if diffs} == {}


async def test_a_worker_killed_around_a_commit_on_the_cluster_restarts_to_the_clean_tree(
    stack_settings: Settings, redis_cluster: RedisClusterNodes, tmp_path: Path
) -> None:
    """The same kills on a Redis Cluster (cluster mode): each restarted worker builds the tree
    the single primary's clean run builds, node by node."""
    on_cluster = stack_settings.model_copy(
        update={"redis_url": redis_cluster.url, "redis_cluster": True}
    )
    runs = await asyncio.gather(
        clean_run(stack_settings, tmp_path),
        *(killed_run(on_cluster, tmp_path, n, KILL_POINTS[n]) for n in KILLED_MID_COMMIT),
    )
    (clean, _), *killed = runs
    assert {v[1] for v in clean.nodes.values()} == {1, 2, 3, 4, 5}  # every level closed
    found = {
        n: differences(clean, snap) for n, (snap, _) in zip(KILLED_MID_COMMIT, killed, strict=True)
    }
    report = {
        n: figures | {"differences": len(found[n])}
        for n, (_, figures) in zip(KILLED_MID_COMMIT, killed, strict=True)
    }
    print("CRASH-SUITE-CLUSTER " + json.dumps(report))
    assert {name: diffs for name, diffs in found.items() if diffs} == {}


# The kills on either side of a user's commit, run again with the input in a tenant's turns
# topic: a tenant's topic changes what the worker reads and where its offsets and progress
# marks go, which is what these two cross (the commit, then the marks and the outboxes); the
# consolidation's and the forget's kills read nothing of the turns topic's positions and run
# on the shared topic above. Two scenarios beside the clean run, not the whole matrix: they
# run side by side with it, so the test takes about as long as one scenario.
KILLED_IN_TENANT_TOPIC = KILLED_MID_COMMIT


async def test_a_worker_killed_with_a_turns_topic_per_tenant_restarts_to_the_clean_tree(
    stack_settings: Settings, tmp_path: Path
) -> None:
    """The input's users in a tenant with a turns topic of its own, killed around a commit:
    each restarted worker builds the tree a clean run of the same users on the shared turns
    topic builds, node by node, and its progress marks are the tenant's topic's."""
    (clean, _), *killed = await asyncio.gather(
        clean_run(stack_settings, tmp_path, TENANT_CAST, "tenant-clean"),
        *(killed_in_a_tenants_topic(stack_settings, tmp_path, n) for n in KILLED_IN_TENANT_TOPIC),
    )
    assert {v[1] for v in clean.nodes.values()} == {1, 2, 3, 4, 5}  # every level closed
    assert all(v[0] == TENANT_CAST.kept for v in clean.nodes.values())
    found = {
        n: differences(clean, snap)
        for n, (snap, _, _) in zip(KILLED_IN_TENANT_TOPIC, killed, strict=True)
    }
    report = {
        n: figures | {"differences": len(found[n])}
        for n, (_, figures, _) in zip(KILLED_IN_TENANT_TOPIC, killed, strict=True)
    }
    print("CRASH-SUITE-TENANT-TOPIC " + json.dumps(report))
    assert {name: diffs for name, diffs in found.items() if diffs} == {}
    for _, _, marks in killed:
        # Every record was read from the tenant's topic and marked under it.
        [(shared, none), (tenants, passed)] = marks.items()
        assert shared is None and none == {} and tenants is not None and passed


async def test_a_worker_on_the_local_model_killed_at_a_commit_keeps_the_facts_of_a_clean_run(
    stack_settings: Settings, tmp_path: Path
) -> None:
    """With the local int8 model, whether a message implies a fact by its frame is decided on
    its vector: the worker killed before a commit replays the input batched otherwise, and
    keeps the facts, the implied ones included, that a clean run keeps; node by node the
    same tree."""
    local = {
        "MEMSTREAM_EMBEDDER": "local",
        "MEMSTREAM_EMBED_RUNTIME": "onnx-int8",
        "MEMSTREAM_EMBED_PROCESSES": "1",
        # One export for both runs: the first to start exports, the other waits for it.
        "MEMSTREAM_MODEL_CACHE_DIR": str(tmp_path / "models"),
    }
    (clean, _), (killed, figures) = await asyncio.gather(
        clean_run(stack_settings, tmp_path, name="local-clean", local=local),
        killed_then_restarted(
            await scenario_settings(stack_settings, tmp_path, "local-l1"),
            KILL_POINTS["l1"],
            local=local,
        ),
    )
    facts, _ = clean.knowledge[KEPT]
    implied = [value for _, value in facts if '"certainty": "implied"' in value]
    assert any("Brightline" in v for v in implied) and any("Harbour Rowers" in v for v in implied)
    found = differences(clean, killed)
    print("CRASH-SUITE-LOCAL-MODEL " + json.dumps(figures | {"differences": len(found)}))
    assert found == []
