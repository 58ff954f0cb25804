"""Several workers on a real Redis Cluster build the tree one process builds.

A dozen users' chats (sessions closed over three weeks, so every level closes) go through
the real broker twice in one run, each time with topics, consumer groups, namespace and
collection of their own: once through the whole write path in this process, then through two
`memstream worker --role segmenter` and two `--role consolidator` processes (each role one
consumer group), with the scheduler in this process. The two segmenters, and the two
consolidators, must split their topic's partitions between them; then one segmenter is
killed (SIGKILL, by itself at an exact step of its third commit) in the middle of the stream,
and the other must take its partitions over.
The tree on the cluster must then equal the one-process tree node by node, versions
included: nothing lost, nothing done twice.

The index. Qdrant's in-process engine lets one process open a shard, so four processes can
share an index only through a Qdrant server. With `MEMSTREAM_QDRANT_URL` set, every worker
writes the one collection there and the test compares it with the one-process collection.
Without it (this machine has no Qdrant server), each worker writes a shard of its own, which
the test discards: the test proves the Redis side, and the index is then written from the
tree by a single writer (`memstream repair`'s restore, in this process) and compared with the
one-process index, point by point.
"""

from __future__ import annotations

import asyncio
import re
import signal
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from memstream.bootstrap import Container, build_repair, connect
from memstream.domain.models import Level, MemoryNode
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.runner import WRITE_PATH, Part, lag_groups, run_parts
from memstream.settings import Settings
from memstream_lab.bench.scale_chat import locomo_shape, user_chat
from memstream_lab.bench.worker_process import WorkerProcess, worker_environment

from .crash_rig import publish
from .redis_cluster import RedisClusterNodes
from .test_cluster_write_path import on_its_own
from .test_write_path import all_nodes

USERS = [f"worker-user-{n:02d}" for n in range(12)]
MESSAGES_PER_USER = 28
SPAN_DAYS = 21  # a few sessions a user, over days, weeks and a month boundary
WORKERS_PER_ROLE = 2
DEADLINE_S = 90.0
# SIGKILL, by the worker itself, at its third commit of L1s: the L1s and their window
# closures are in Redis (the outbox), nothing is published yet, no offset is committed. Its
# partitions still hold records, which the other segmenter must take over, outbox included.
DOOMED_SEGMENTER_FAULT = "l1.before_publish:3"
# Its steps are small, so that its third commit comes however the broker batches its records:
# with the default step (1,024 records) a quiet machine handed it its partitions' records in
# fewer than three steps, and it was never killed.
DOOMED_SEGMENTER_STEP = "8"
# Aiokafka's line when a member's partitions change (a rebalance): the last one holds.
_ASSIGNED = re.compile(r"Setting newly assigned partitions (?P<partitions>.*) for group")
_PARTITION = re.compile(r"TopicPartition\(topic='(?P<topic>[^']+)', partition=(?P<number>\d+)\)")


def chats() -> list[tuple[str, dict[str, Any]]]:
    """Every user's events as (user, event), users one after the other."""
    shape = locomo_shape()
    return [
        (user, event)
        for user in USERS
        for event in user_chat(user, shape, MESSAGES_PER_USER, SPAN_DAYS)
    ]


def fast(settings: Settings) -> Settings:
    """What both runs share: the hashing embedder (four processes would each load a model)
    and no pacing of the index's restore."""
    return settings.model_copy(
        update={"embedder": "hashing", "rebuild_repair_nodes_per_s": 100_000.0}
    )


async def tree_of(container: Container) -> dict[str, MemoryNode]:
    nodes: dict[str, MemoryNode] = {}
    for user in USERS:
        nodes |= {node.id: node for node in await all_nodes(container, user)}
    return nodes


async def index_of(container: Container, nodes: dict[str, MemoryNode]) -> dict[str, Any]:
    """The payload of every node's point, and the points per user."""
    payloads: dict[str, Any] = {}
    for user in USERS:
        ids = [node_id for node_id, node in nodes.items() if node.user_id == user]
        payloads |= await container.index.get(ids, user_id=user)
        payloads[f"points of {user}"] = await container.index.count(user)
    return payloads


def assigned(worker: WorkerProcess, topic: str) -> set[int]:
    """The partitions of `topic` the worker's last rebalance gave it (none before one)."""
    latest: set[int] = set()
    for line in worker.log_path.read_text(errors="replace").splitlines():
        if (found := _ASSIGNED.search(line)) is not None:
            latest = {
                int(p["number"])
                for p in _PARTITION.finditer(found["partitions"])
                if p["topic"] == topic
            }
    return latest


async def until(what: str, holds: Callable[[], bool], workers: list[WorkerProcess]) -> None:
    """Poll `holds` until it does, with a deadline; a worker that exits fails at once."""
    deadline = time.monotonic() + DEADLINE_S
    while not holds():
        for worker in workers:
            if worker.proc.poll() is not None:
                raise RuntimeError(f"a worker exited ({worker.proc.returncode})\n{worker.tail()}")
        if time.monotonic() > deadline:
            tails = "\n---\n".join(w.tail(8) for w in workers)
            raise TimeoutError(f"not within {DEADLINE_S:.0f} s: {what}\n{tails}")
        await asyncio.sleep(0.1)


def split_between(workers: list[WorkerProcess], topic: str, partitions: int) -> bool:
    """Each worker holds some of the topic's partitions, none held twice, all held."""
    held = [assigned(w, topic) for w in workers]
    union = set().union(*held)
    return all(held) and sum(map(len, held)) == len(union) == partitions


@asynccontextmanager
async def role_workers(
    settings: Settings, logs: Path
) -> AsyncIterator[dict[str, list[WorkerProcess]]]:
    """Two processes of each consuming role, each with a data directory of its own; the
    first segmenter kills itself in the middle of the stream (`DOOMED_SEGMENTER_FAULT`)."""
    workers: dict[str, list[WorkerProcess]] = {"segmenter": [], "consolidator": []}
    async with AsyncExitStack() as stack:
        for role, started in workers.items():
            for n in range(WORKERS_PER_ROLE):
                own = {
                    "MEMSTREAM_REDIS_CLUSTER": "true",
                    "MEMSTREAM_QDRANT_URL": settings.qdrant.url,
                    "MEMSTREAM_QDRANT_COLLECTION": settings.qdrant.collection,
                    "MEMSTREAM_EMBEDDER": "hashing",
                    "MEMSTREAM_CLOCK_GRACE_S": "0",
                }
                if role == "segmenter" and n == 0:
                    own["MEMSTREAM_FAULT_POINT"] = DOOMED_SEGMENTER_FAULT
                    own["MEMSTREAM_CONSUME_STEP_SIZE"] = DOOMED_SEGMENTER_STEP
                data = settings.model_copy(update={"data_dir": logs / f"{role}-{n}"})
                env = worker_environment(data, own)
                worker = WorkerProcess(env, logs / f"{role}-{n}.log", role)
                stack.push_async_callback(stopped, worker)
                started.append(worker)
        yield workers


async def stopped(worker: WorkerProcess) -> None:
    worker.signal(signal.SIGTERM)
    await worker.exited(timeout_s=30)


async def test_two_workers_per_role_share_the_partitions_and_build_the_one_process_tree(
    settings: Settings, redis_cluster: RedisClusterNodes, tmp_path: Path
) -> None:
    events = chats()
    on_cluster = {"redis_url": redis_cluster.url, "redis_cluster": True}

    one = fast(await on_its_own(settings, "one", tmp_path / "one")).model_copy(update=on_cluster)
    async with connect(one, prioritise_online=True) as runtime:
        async with run_parts(runtime, WRITE_PATH, fast_rebalance=True):
            await publish(one, events)
            await wait_caught_up(runtime, USERS, timeout_s=DEADLINE_S)
        expected = await tree_of(runtime)
        expected_index = await index_of(runtime, expected)
    assert {n.level for n in expected.values()} == set(Level)

    many = fast(await on_its_own(settings, "many", tmp_path / "many")).model_copy(update=on_cluster)
    async with connect(many) as runtime, role_workers(many, tmp_path) as workers:
        turns, windows = runtime.catalog.turns, runtime.catalog.windows
        segmenters, consolidators = workers["segmenter"], workers["consolidator"]
        everyone = segmenters + consolidators
        await until(
            "the segmenters split the turns' partitions",
            lambda: split_between(segmenters, turns.name, turns.partitions),
            everyone,
        )
        await until(
            "the consolidators split the windows' partitions",
            lambda: split_between(consolidators, windows.name, windows.partitions),
            everyone,
        )
        groups = lag_groups(many, {Part.SEGMENTER}, runtime)
        async with run_parts(runtime, {Part.SCHEDULER}):
            await publish(many, events)
            killed, survivor = segmenters
            assert await killed.exited(timeout_s=DEADLINE_S) == -signal.SIGKILL
            await until(
                "the surviving segmenter takes every partition over",
                lambda: assigned(survivor, turns.name) == set(range(turns.partitions)),
                [survivor, *consolidators],
            )
            await wait_caught_up(runtime, USERS, timeout_s=DEADLINE_S, groups=groups)
        found = await tree_of(runtime)
        assert found.keys() == expected.keys()
        assert [i for i in expected if found[i] != expected[i]] == []
        leaves = [s for n in found.values() if n.level == Level.SEGMENT for s in n.source_ids]
        assert len(leaves) == len(set(leaves)) == MESSAGES_PER_USER * len(USERS)

        if not many.qdrant.url:
            # The workers' shards were their own: the index comes from the tree, one writer.
            repair = build_repair(runtime)
            for user in USERS:
                await repair.repair(user)
        assert await index_of(runtime, found) == expected_index
