"""A primary of the Redis Cluster dies while turns flow; its replica takes over, and the worker
goes on by itself: every turn has its L1, none twice, and the tree is the tree a single primary
builds from the same turns, node by node (issue #39).

The cluster has six nodes (three primaries, one replica each) and a node timeout of one second,
so the cluster promotes the replica by itself (no `CLUSTER FAILOVER` from the test), as it
would in production. The workers (segmenter and consolidator, in this process) run in cluster
mode with `MEMSTREAM_REDIS_WAIT_REPLICAS=1`. A few dozen turns of six users are published at a
steady pace. Redis replicates asynchronously, so a primary may acknowledge a commit its replica
never gets; the test makes that certain instead of likely: it pauses the replica (SIGSTOP),
writes more to the primary than the sockets between the two can buffer, waits until the
primary holds an L1 written after that, then kills the primary (SIGKILL) and lets the replica
go on. Without the wait those L1s are lost (the test fails so): the segmenter would commit its
offsets past them. The L1 freshness before and around the failover is printed as one JSON
line, `FAILOVER {...}` (docs/figures/cluster.md).
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from memstream.adapters.kafka.producer import KafkaPublisher
from memstream.adapters.redis import keys
from memstream.adapters.redis.connection import open_client
from memstream.adapters.redis.errors import STORE_ERRORS
from memstream.adapters.redis.tree import RedisTree
from memstream.bootstrap import Container, connect
from memstream.contracts.codec import encode_tick
from memstream.contracts.records import encode_value
from memstream.domain.forgetting import Tombstone
from memstream.domain.ids import segment_id
from memstream.domain.models import Level, MemoryNode
from memstream.edges.probes import process_registry
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.runner import Part, run_parts
from memstream.metrics import Metrics
from memstream.settings import Settings

from .redis_cluster import RedisClusterNodes, running_cluster
from .test_cluster_write_path import on_its_own
from .test_write_path import all_nodes

pytestmark = pytest.mark.integration

USERS = [f"failover-{name}" for name in ("ana", "bo", "cy", "di", "ed", "flo")]
DAYS = (datetime(2024, 3, 4, 18, tzinfo=UTC), datetime(2024, 3, 5, 18, tzinfo=UTC))
TURNS_A_SESSION = 4
PACE_S = 0.15  # between two records published
WORKERS = frozenset({Part.SEGMENTER, Part.CONSOLIDATOR})  # ticks come from the test
DEADLINE_S = 60.0
# Written to the primary while its replica is paused: beyond what the loopback sockets
# between them buffer (a few MiB each way, at most 36 MiB here), below the primary's soft
# limit for a replica's output (64 MiB).
BALLAST_BYTES = 48 * 1024 * 1024


@pytest.fixture(scope="module")
def replicated_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterNodes]:
    """Three primaries with a replica each; a primary silent for a second counts as failed."""
    directory = tmp_path_factory.mktemp("replicated-cluster")
    with running_cluster(directory, replicas=1, node_timeout_ms=1000) as nodes:
        yield nodes


def conversation() -> list[tuple[str, dict[str, Any]]]:
    """(user, event) in publishing order: each user talks in one session on each of two days
    (messages between people, role `other`, each an L1 of its own at once), the users' records
    interleaved."""
    per_user: list[list[dict[str, Any]]] = []
    for user in USERS:
        events: list[dict[str, Any]] = []
        for day, start in enumerate(DAYS):
            session = f"{user}-s{day}"
            for seq in range(TURNS_A_SESSION):
                events.append(
                    {
                        "type": "turn.v1",
                        "event_id": f"{user}-{day}-{seq}",
                        "user_id": user,
                        "session_id": session,
                        "seq": seq,
                        "speaker": ("Ana", "Bo")[seq % 2],
                        "role": "other",
                        "text": f"{user} on day {day}, message {seq}: topic {day * 10 + seq}",
                        "ts": (start + timedelta(minutes=seq)).isoformat(),
                    }
                )
            end = (start + timedelta(minutes=TURNS_A_SESSION)).isoformat()
            events.append(
                {"type": "session_end.v1", "user_id": user, "session_id": session, "ts": end}
            )
        per_user.append(events)
    rounds = zip(*per_user, strict=True)
    return [(event["user_id"], event) for events in rounds for event in events]


def l1_of(user: str, event: dict[str, Any]) -> str:
    return segment_id(user, [event["event_id"]])


async def publish_all(
    runtime: Container,
    events: list[tuple[str, dict[str, Any]]],
    *,
    pace_s: float = 0.0,
    before_each: Callable[[str, dict[str, Any]], None] | None = None,
) -> None:
    """`events` onto the turns topic, keyed by user, one every `pace_s`."""
    publisher = KafkaPublisher.for_bootstrap(runtime.settings.broker.bootstrap)
    await publisher.start()
    try:
        for user, event in events:
            if before_each is not None:
                before_each(user, event)
            value = encode_value(event)
            await publisher.producer.send_and_wait(
                runtime.catalog.turns.name, key=user.encode(), value=value
            )
            if pace_s:
                await asyncio.sleep(pace_s)
    finally:
        await publisher.stop()


async def close_everything(runtime: Container, now: datetime) -> None:
    """A tick for every user, as the clock would send: every window closes (all are past)."""
    await publish_all(runtime, [(user, encode_tick(user, now)) for user in USERS])


async def tree_of(runtime: Container) -> dict[str, MemoryNode]:
    return {n.id: n for user in USERS for n in await all_nodes(runtime, user)}


class Freshness:
    """When each turn was published and since when its L1 has been in the tree, seen through
    a cluster client of the test's own (the workers' client is left alone). An L1 that a
    primary held and then lost with it counts from when it came back."""

    def __init__(self, settings: Settings) -> None:
        self._client = open_client(settings.redis.url, cluster=True)
        self._tree = RedisTree(self._client, settings.redis.namespace, cluster=True)
        self.published: dict[tuple[str, str], float] = {}
        self.seen: dict[tuple[str, str], float] = {}

    async def watch(self, done: asyncio.Event) -> None:
        while not done.is_set() or self.seen.keys() < self.published.keys():
            asked: dict[str, list[str]] = {}
            for user, node_id in list(self.published):
                asked.setdefault(user, []).append(node_id)
            for user, ids in asked.items():
                try:
                    found = {node.id for node in await self._tree.get_many(user, ids)}
                except STORE_ERRORS:  # the cluster mending: ask again
                    continue
                for node_id in ids:
                    if node_id not in found:
                        self.seen.pop((user, node_id), None)
                    else:
                        self.seen.setdefault((user, node_id), time.monotonic())
            await asyncio.sleep(0.02)

    def longest_wait_s(self, published_from: float, published_until: float) -> float:
        return max(
            self.seen[key] - at
            for key, at in self.published.items()
            if published_from <= at < published_until
        )

    async def aclose(self) -> None:
        await self._client.aclose()


async def l1s_held_by(port: int, namespace: str, users: list[str]) -> int:
    """The L1s of `users` the node on `port` holds (asked of that node alone)."""
    node = aioredis.Redis(port=port)
    try:
        level = keys.level(Level.SEGMENT)
        return sum([await node.zcard(keys.user_prefix(u, namespace) + level) for u in users])
    finally:
        await node.aclose()


async def write_ballast(port: int, key: str) -> None:
    node = aioredis.Redis(port=port)
    try:
        await node.set(key, b"\0" * BALLAST_BYTES)
    finally:
        await node.aclose()


async def wait_for(what: str, check: Any, deadline: float) -> None:
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting: {what}"
        await asyncio.sleep(0.02)


async def test_a_primary_killed_while_turns_flow_loses_and_duplicates_no_l1(
    settings: Settings, replicated_cluster: RedisClusterNodes, tmp_path: Path
) -> None:
    settings = settings.model_copy(update={"embedder": "hashing"})  # no model to load
    cluster = (await on_its_own(settings, "failover", tmp_path / "cluster")).model_copy(
        update={
            "redis_url": replicated_cluster.url,
            "redis_cluster": True,
            "redis_wait_replicas": 1,
            "redis_wait_timeout_ms": 100,
        }
    )
    log = conversation()
    now = datetime.now(UTC)
    metrics = Metrics(process_registry())
    freshness = Freshness(cluster)
    deadline = time.monotonic() + DEADLINE_S
    async with connect(cluster, metrics, prioritise_online=True) as runtime:
        slot_map: Any = runtime.tree._r  # type: ignore[attr-defined]
        namespace = cluster.redis.namespace
        await slot_map.initialize()
        owner = {u: slot_map.get_node_from_key(keys.user_prefix(u, namespace)).port for u in USERS}
        # The first user's primary (or the next user's, if another test left it alone).
        victim = next(owner[u] for u in USERS if _has_replica(replicated_cluster, owner[u]))
        replica = replicated_cluster.replica_of(victim)
        on_victim = [u for u in USERS if owner[u] == victim]
        assert len(on_victim) < len(USERS)  # some users' turns never touch the victim
        done = asyncio.Event()
        marks: dict[str, float] = {}

        def published(user: str, event: dict[str, Any]) -> None:
            if event["type"] == "turn.v1":
                freshness.published[(user, l1_of(user, event))] = time.monotonic()

        async def flow() -> None:
            await publish_all(runtime, log, pace_s=PACE_S, before_each=published)

        def held_by_victim() -> Any:
            return l1s_held_by(victim, namespace, on_victim)

        async def fail_over() -> None:
            paused = replicated_cluster.process(replica)
            # Steady state first: the victim's users have L1s, replicated as they came.
            await wait_for(
                "the victim's first L1s", lambda: _more_than(held_by_victim(), 0), deadline
            )
            lagged = store_errors(metrics, "replica_lag")
            paused.send_signal(signal.SIGSTOP)
            marks["paused"] = time.monotonic()
            try:
                # More than the sockets between the two can hold: what the primary writes
                # next stays in its own buffers, and dies with it.
                await write_ballast(victim, f"{namespace}-ballast:{{{on_victim[0]}}}")
                # The primary holds an L1 its replica cannot have, whose commit waits for it.
                held = await held_by_victim()
                await wait_for(
                    "an L1 on the victim its replica has not got",
                    lambda: _more_than(held_by_victim(), held),
                    deadline,
                )
                await wait_for(
                    "a commit waiting", lambda: _counted(metrics, "replica_lag", lagged), deadline
                )
                replicated_cluster.kill(replicated_cluster.ports.index(victim))
                marks["killed"] = time.monotonic()
            finally:
                paused.send_signal(signal.SIGCONT)
            await wait_for(
                "the replica promoted",
                lambda: asyncio.to_thread(replicated_cluster.is_primary, replica),
                deadline,
            )
            marks["promoted"] = time.monotonic()

        async with run_parts(runtime, WORKERS, metrics=metrics, fast_rebalance=True) as running:
            watching = asyncio.create_task(freshness.watch(done))
            try:
                await asyncio.gather(flow(), fail_over())
                await close_everything(runtime, now)
                await wait_caught_up(runtime, USERS, timeout_s=deadline - time.monotonic())
                done.set()
                await asyncio.wait_for(watching, timeout=max(1.0, deadline - time.monotonic()))
            finally:
                done.set()
                watching.cancel()
                await freshness.aclose()
            assert running.agents.alive, running.agents.dead  # no restart: the same agents
        # The workers' cluster client read the slot map again: the replica owns the slots.
        moved_to = slot_map.get_node_from_key(keys.user_prefix(on_victim[0], namespace))
        assert moved_to.port == replica
        found = await tree_of(runtime)

    # Every turn has its L1, in one L1 only.
    turns = [e["event_id"] for _, e in log if e["type"] == "turn.v1"]
    leaves = [n for n in found.values() if n.level == Level.SEGMENT]
    assert Counter(i for leaf in leaves for i in leaf.source_ids) == Counter(turns)
    # The workers met the lost primary (counted by kind) and went on by themselves.
    errors = {
        kind: store_errors(metrics, kind)
        for kind in ("connection", "timeout", "cluster_down", "try_again", "replica_lag")
    }
    assert errors["connection"] + errors["timeout"] + errors["cluster_down"] > 0, errors

    single = await on_its_own(settings, "single", tmp_path / "single")
    async with connect(single, prioritise_online=True) as runtime:
        async with run_parts(runtime, WORKERS, fast_rebalance=True):
            await publish_all(runtime, log)
            await close_everything(runtime, now)
            await wait_caught_up(runtime, USERS, timeout_s=DEADLINE_S)
        expected = await tree_of(runtime)
    assert found.keys() == expected.keys()
    assert [i for i in expected if found[i] != expected[i]] == []

    before = freshness.longest_wait_s(0.0, marks["paused"])
    around = freshness.longest_wait_s(marks["paused"], time.monotonic())
    figures = {
        "turns": len(turns),
        "users_on_the_lost_primary": len(on_victim),
        "longest_l1_wait_before_s": round(before, 2),
        "longest_l1_wait_around_failover_s": round(around, 2),
        "replica_paused_s": round(marks["killed"] - marks["paused"], 2),
        "kill_to_promotion_s": round(marks["promoted"] - marks["killed"], 2),
        "store_errors": errors,
    }
    print("FAILOVER " + json.dumps(figures))


async def _more_than(count: Any, floor: int) -> bool:
    return int(await count) > floor


def store_errors(metrics: Metrics, kind: str) -> int:
    labels = {"store": "redis", "kind": kind}
    return int(metrics.registry.get_sample_value("memstream_store_errors_total", labels) or 0)


async def _counted(metrics: Metrics, kind: str, before: int) -> bool:
    return store_errors(metrics, kind) > before


async def test_a_primary_without_a_replica_does_not_hold_its_commits(
    stack_settings: Settings,
) -> None:
    """What a promoted primary is until a replica joins it: with the wait on, its commits go
    through at once (it has no replica to wait for), none counted as lagging."""
    errors: list[str] = []
    client = open_client(stack_settings.redis.url)  # the stack's Redis: one primary, alone
    tree = RedisTree(
        client,
        f"alone-{uuid.uuid4().hex[:12]}",
        on_error=errors.append,
        wait_replicas=1,
        wait_timeout_ms=5000,
    )
    try:
        started = time.monotonic()
        await tree.forget("alone", Tombstone(forgotten_at=time.time()), ttl_s=60)
        assert time.monotonic() - started < 5.0  # not one WAIT's timeout
        assert await tree.tombstone("alone") is not None
        assert errors == []
    finally:
        await client.aclose()


async def test_the_clocks_reads_across_users_follow_a_failover(
    replicated_cluster: RedisClusterNodes,
) -> None:
    """A process that only reads across users (the scheduler's due users) and knew the slot
    map from before a failover reads from the promoted replica after it: a read that meets
    the dead primary makes the client learn the map again."""
    primary = next(p for p in replicated_cluster.ports if _has_replica(replicated_cluster, p))
    replica = replicated_cluster.replica_of(primary)
    errors: list[str] = []
    client = open_client(replicated_cluster.url, cluster=True)
    tree = RedisTree(client, f"clock-{uuid.uuid4().hex[:12]}", cluster=True, on_error=errors.append)
    try:
        assert await tree.due_users(datetime.now(UTC)) == []  # the map, learned before
        replicated_cluster.kill(replicated_cluster.ports.index(primary))
        deadline = time.monotonic() + DEADLINE_S
        while True:
            assert time.monotonic() < deadline, f"never read again: {Counter(errors)}"
            try:
                assert await tree.due_users(datetime.now(UTC)) == []
            except STORE_ERRORS:
                await asyncio.sleep(0.1)  # the next tick
                continue
            if replicated_cluster.is_primary(replica):
                break
        assert {"connection", "cluster_down"} & set(errors), errors
    finally:
        await client.aclose()


def _has_replica(nodes: RedisClusterNodes, port: int) -> bool:
    if nodes.process(port).poll() is not None or not nodes.is_primary(port):
        return False
    try:
        nodes.replica_of(port)
    except LookupError:
        return False
    return True
