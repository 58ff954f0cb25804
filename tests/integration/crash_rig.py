"""The crash suite's rig: `memstream worker --role all` as a real process, killed and restarted.

- `synthetic_log`: a small conversation for one user over eight days (two weeks, two months,
  so every level closes) and a second user forgotten at the end of the input; `Cast` names
  the two (`TENANT_CAST`: the same two in a tenant, for a turns topic per tenant).
- `Worker`: the CLI worker as a subprocess of this test, with its own topics, group, Redis
  namespace and Qdrant directory, on the Redis the settings name (a cluster in cluster
  mode); `MEMSTREAM_FAULT_POINT` makes it SIGKILL itself at an exact step
  (`memstream.faults`), never after a guessed sleep.
- `wait_settled`: polls (with a deadline) until both topics are consumed and no window is open.
- `consuming_after`: seconds from a restart until the group commits past where it stood.
- `snapshot`: every node (id, level, version, text, sources) from Redis and every payload
  from Qdrant, read once the worker has stopped (qdrant-edge lets one process open a shard).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from memstream.adapters.kafka.admin import ensure_topics
from memstream.adapters.kafka.lag import consumer_lag
from memstream.adapters.redis.connection import open_client
from memstream.adapters.redis.tree import RedisTree
from memstream.bootstrap import open_index
from memstream.contracts.catalog import Catalog, load_catalog
from memstream.contracts.tenant_topics import TurnsRouting
from memstream.domain.models import Level
from memstream.settings import Settings

KEPT = "crash-ana"
GONE = "crash-bo"


@dataclass(frozen=True)
class Cast:
    """The input's two users: the one kept, the one forgotten at the end."""

    kept: str = KEPT
    gone: str = GONE

    @property
    def users(self) -> tuple[str, str]:
        return (self.kept, self.gone)


CAST = Cast()
# The same users in the tenant `crash` (`MEMSTREAM_TURNS_TOPIC_PER_TENANT=crash`).
TENANT = "crash"
TENANT_CAST = Cast(f"{TENANT}:ana", f"{TENANT}:bo")
SERVICES = Path(__file__).resolve().parents[2] / "services"
# Small batches: a kill at hit n lands in the middle of the input, not before or after it.
BATCH = 8


CITIES = ("Porto", "Berlin", "Madrid")


# The order a session's six turns are published in: the first and last replies come before
# the messages they answer, the second exchange in order.
SENT_ORDER = (1, 0, 2, 3, 5, 4)


def synthetic_log(
    cast: Cast = CAST, told: Mapping[int, str] | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """(user, event) in publishing order: the kept user talks on eight days from Mon 29 Jan
    2024 (weeks of 29 Jan and 5 Feb, months January and February); the other talks on two of
    them, then asks to be forgotten. `told`: the text of a day's second message, by the
    day's index, in place of the generated one."""
    days = [29, 30, 31, 32, 33, 36, 37, 38]  # of 2024, counted from 1 January (32: 1 Feb)
    events: list[tuple[str, dict[str, Any]]] = []
    for n, day in enumerate(days):
        start = datetime(2024, 1, 1, 18, tzinfo=UTC) + timedelta(days=day - 1)
        for user in cast.users if n < 2 else (cast.kept,):
            # Each session's turns out of `seq` order (as two producer instances would send
            # them): the reorder holds, committed with the window state, cross kill points.
            for seq in SENT_ORDER:
                i, j = divmod(seq, 2)
                role = ("user", "assistant")[j]
                speaker = "Ana" if role == "user" else "Bot"
                text = f"{speaker} on day {day}, exchange {i}: {user} likes topic {day * 7 + i}"
                if role == "user" and i == 0:  # a fact that changes: versions to compare
                    text += f". I live in {CITIES[n % len(CITIES)]} now."
                if role == "user" and i == 1 and n == 3:  # an ending told without its slot
                    text += f". I've left {CITIES[n % len(CITIES)]}."
                if role == "user" and i == 1 and told and n in told:
                    text = told[n]
                events.append(
                    (
                        user,
                        {
                            "type": "turn.v1",
                            "event_id": f"{user}-{day}-{seq}",
                            "user_id": user,
                            "session_id": f"{user}-s{day}",
                            "seq": seq,
                            "speaker": speaker,
                            "role": role,
                            "text": text,
                            "ts": (start + timedelta(minutes=seq)).isoformat(),
                        },
                    )
                )
            # An explicit end: the session closes on event time, not after an idle wait.
            end = (start + timedelta(minutes=10)).isoformat()
            events.append(
                (
                    user,
                    {
                        "type": "session_end.v1",
                        "user_id": user,
                        "session_id": f"{user}-s{day}",
                        "ts": end,
                    },
                )
            )
    events.append((cast.gone, {"type": "forget.v1", "user_id": cast.gone}))
    return events


def routing(settings: Settings) -> TurnsRouting:
    """The scenario's turns topics: the shared one, and its tenants' when the settings name
    any (`MEMSTREAM_TURNS_TOPIC_PER_TENANT`)."""
    return settings.broker.turns_routing(load_catalog(settings.broker.topic_prefix).turns.name)


async def publish(settings: Settings, events: list[tuple[str, dict[str, Any]]]) -> None:
    """Each event to its user's turns topic, as the SDK's producer given the same tenants."""
    topic_for = routing(settings).topic_for
    producer = AIOKafkaProducer(bootstrap_servers=settings.broker.bootstrap, acks="all")
    await producer.start()
    try:
        for user, event in events:
            await producer.send(topic_for(user), json.dumps(event).encode(), key=user.encode())
        await producer.flush()
    finally:
        await producer.stop()


async def scenario_settings(stack: Settings, root: Path, name: str) -> Settings:
    uid = f"{name}-{uuid.uuid4().hex[:8]}"
    settings = stack.model_copy(
        update={
            "topic_prefix": f"crash-{uid}.",
            "consumer_group": f"memstream-crash-{uid}",
            "redis_namespace": f"crash-{uid}",
            "qdrant_collection": "memories",
            "data_dir": root / name,
            "embedder": "hashing",
            # The log sends sessions out of order: the reorder window (off by default) holds
            # turns across the kill points.
            "session_reorder_turns": 32,
        }
    )
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    catalog = load_catalog(settings.broker.topic_prefix)
    tenants = routing(settings).specs(catalog.turns)
    await ensure_topics(settings.broker.bootstrap, [*catalog.topics, *tenants])
    return settings


_RUNNING = re.compile(r"start-up: running at [\d.]+ s \(cpu (?P<cpu>[\d.]+) s\)")


_PR_SET_PDEATHSIG = 1


def _killed_with_the_tests() -> None:
    """In the worker, before exec: killed when the test process ends, however it ends. A
    scenario that failed on a timeout left its worker running (its own session, so nothing
    else stopped it), and it took the cores from every measurement for an hour after."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _stamp(line: str) -> float:
    """Epoch seconds of a log line ("2026-11-23 22:42:15,608 INFO ..."), local time."""
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()


class Worker:
    """`memstream worker --role all` on a scenario's settings, as a child process."""

    def __init__(
        self, settings: Settings, fault_point: str = "", extra: dict[str, str] | None = None
    ) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
        env |= {
            "PYTHONPATH": str(SERVICES),
            "MEMSTREAM_KAFKA_BOOTSTRAP": settings.broker.bootstrap,
            "MEMSTREAM_REDIS_URL": settings.redis.url,
            "MEMSTREAM_REDIS_CLUSTER": str(settings.redis.cluster).lower(),
            "MEMSTREAM_TOPIC_PREFIX": settings.broker.topic_prefix,
            "MEMSTREAM_CONSUMER_GROUP": settings.broker.consumer_group,
            "MEMSTREAM_REDIS_NAMESPACE": settings.redis.namespace,
            "MEMSTREAM_QDRANT_COLLECTION": settings.qdrant.collection,
            "MEMSTREAM_DATA_DIR": str(settings.data_dir),
            "MEMSTREAM_EMBEDDER": "hashing",
            "MEMSTREAM_CLOCK_GRACE_S": "0",
            "MEMSTREAM_CLOCK_INTERVAL_S": "0.5",
            "MEMSTREAM_CONSUME_BATCH_SIZE": str(BATCH),
            "MEMSTREAM_METRICS_PORT": "0",
            # The group's identity across restarts: what a StatefulSet pod name gives.
            "MEMSTREAM_KAFKA_GROUP_INSTANCE_ID": f"{settings.broker.consumer_group}-0",
            "MEMSTREAM_FAULT_POINT": fault_point,
            # The crash suite compares the facts and entities of every run too.
            "MEMSTREAM_KNOWLEDGE": "true",
            "MEMSTREAM_TURNS_TOPIC_PER_TENANT": settings.broker.turns_topic_per_tenant,
        } | (extra or {})
        self.log_path = settings.data_dir / f"worker-{time.monotonic_ns()}.log"
        self._log = self.log_path.open("wb")
        self.started = time.monotonic()
        self.started_at = time.time()
        argv = [sys.executable, "-c", "from memstream.entrypoints.cli import app; app()"]
        self.proc = subprocess.Popen(
            [*argv, "worker", "--role", "all", "--host", "127.0.0.1"],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group, so a kill reaches no one else
            preexec_fn=_killed_with_the_tests,
        )

    async def exited(self, timeout_s: float) -> int:
        """Wait (polling, with a deadline) for the process to end; its return code."""
        deadline = time.monotonic() + timeout_s
        while (code := self.proc.poll()) is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"worker still running after {timeout_s:.0f} s\n{self.tail()}")
            await asyncio.sleep(0.1)
        self._log.close()
        return code

    async def stop(self, signum: int = signal.SIGTERM, timeout_s: float = 30.0) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signum)
        return await self.exited(timeout_s)

    def joined_s(self) -> tuple[float, float]:
        """From the log: seconds from spawn to asking to join the group, then to the
        partitions being assigned (the group's wait, which membership settings govern)."""
        asked = assigned = None
        for line in self.log_path.read_text(errors="replace").splitlines():
            if "Revoking previously assigned partitions" in line and asked is None:
                asked = _stamp(line)
            elif "Setting newly assigned partitions" in line:
                assigned = _stamp(line)
                break
        if asked is None or assigned is None:
            raise ValueError(f"no group join in the log\n{self.tail()}")
        return asked - self.started_at, assigned - asked

    def start_cpu_s(self) -> float | None:
        """CPU seconds the process had used once it ran every part (its `running` start-up
        phase): what its start costs, whatever the machine's load did to the wall clock."""
        for line in self.log_path.read_text(errors="replace").splitlines():
            if (found := _RUNNING.search(line)) is not None:
                return float(found["cpu"])
        return None

    def tail(self, lines: int = 30) -> str:
        self._log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def topics(settings: Settings) -> list[str]:
    """What the worker consumes: every turns topic, and the windows topic."""
    catalog: Catalog = load_catalog(settings.broker.topic_prefix)
    return [*routing(settings).topics, catalog.windows.name]


async def wait_settled(
    settings: Settings, worker: Worker, timeout_s: float = 90.0, cast: Cast = CAST
) -> None:
    """Until every topic is consumed and the kept user has no open window, twice in a row."""
    tree = tree_of(settings)
    deadline = time.monotonic() + timeout_s
    quiet = 0
    try:
        while quiet < 2:
            if worker.proc.poll() is not None:
                raise RuntimeError(f"worker exited ({worker.proc.returncode})\n{worker.tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"not settled after {timeout_s:.0f} s\n{worker.tail()}")
            await asyncio.sleep(0.5)
            lag = await consumer_lag(
                settings.broker.bootstrap, settings.broker.consumer_group, topics(settings)
            )
            state = await tree.load_state(cast.kept)
            still_open = len(state["open_windows"]) if state else 1
            quiet = quiet + 1 if sum(lag.values()) == 0 and still_open == 0 else 0
    finally:
        await tree._r.aclose()


async def committed(admin: AIOKafkaAdminClient, settings: Settings) -> int:
    """The group's committed offsets over every topic it reads, summed."""
    catalog = load_catalog(settings.broker.topic_prefix)
    specs = [*routing(settings).specs(catalog.turns), catalog.turns, catalog.windows]
    partitions = [TopicPartition(spec.name, p) for spec in specs for p in range(spec.partitions)]
    offsets = await admin.list_consumer_group_offsets(
        settings.broker.consumer_group, partitions=partitions
    )
    return sum(max(m.offset, 0) for m in offsets.values())


async def consuming_after(settings: Settings, worker: Worker, timeout_s: float = 60.0) -> float:
    """Seconds from the worker's start until its group commits beyond where it stood: the
    restart, the group join and the first batch handled (commits go every second)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.broker.bootstrap)
    await admin.start()
    try:
        before = await committed(admin, settings)
        deadline = time.monotonic() + timeout_s
        while await committed(admin, settings) <= before:
            if worker.proc.poll() is not None:
                raise RuntimeError(f"worker exited ({worker.proc.returncode})\n{worker.tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no progress after {timeout_s:.0f} s\n{worker.tail()}")
            await asyncio.sleep(0.1)
        return time.monotonic() - worker.started
    finally:
        await admin.close()


@dataclass(frozen=True)
class Snapshot:
    nodes: dict[str, tuple[Any, ...]]  # id -> (user, level, version, text, sources, parent)
    payloads: dict[str, dict[str, Any]]  # id -> Qdrant payload
    points: dict[str, int]  # user -> points in Qdrant
    keys: dict[str, list[str]]  # user -> Redis keys left (the tombstone aside), by suffix
    # user -> what its L1s said, as stored: (facts hash, entities hash), each sorted
    knowledge: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]]


def tree_of(settings: Settings) -> RedisTree:
    """The scenario's tree, read on its own client (a cluster's in cluster mode)."""
    cluster = settings.redis.cluster
    return RedisTree(
        open_client(settings.redis.url, cluster=cluster), settings.redis.namespace, cluster=cluster
    )


async def snapshot(settings: Settings, cast: Cast = CAST) -> Snapshot:
    tree = tree_of(settings)
    client = tree._r
    nodes: dict[str, tuple[Any, ...]] = {}
    points: dict[str, int] = {}
    keys: dict[str, list[str]] = {}
    payloads: dict[str, dict[str, Any]] = {}
    knowledge: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]] = {}
    async with AsyncExitStack() as stack:
        stack.push_async_callback(client.aclose)
        index = await open_index(
            settings, settings.qdrant.collection, settings.embedding.dim, stack
        )
        for user in cast.users:
            ids: list[str] = []
            for level in Level:
                ids += await tree.level_ids(user, level, limit=10_000)
            for n in await tree.get_many(user, ids):
                nodes[n.id] = (user, int(n.level), n.version, n.text, n.source_ids, n.parent_id)
            payloads |= await index.get(ids, user_id=user)
            points[user] = await index.count(user)
            prefix = f"{settings.redis.namespace}:{{{user}}}:"
            found = [k.decode() async for k in client.scan_iter(match=prefix + "*")]
            keys[user] = sorted(
                k.removeprefix(prefix) for k in found if not k.endswith(":tombstone")
            )
            knowledge[user] = (
                _hash(await client.hgetall(prefix + "facts")),
                _hash(await client.hgetall(prefix + "entities")),
            )
    return Snapshot(nodes, payloads, points, keys, knowledge)


def _hash(raw: dict[bytes, bytes]) -> list[tuple[str, str]]:
    return sorted((k.decode(), v.decode()) for k, v in raw.items())


def differences(clean: Snapshot, other: Snapshot) -> list[str]:
    """What differs node by node (and point by point) from the clean run."""
    out: list[str] = []
    for node_id in sorted(clean.nodes.keys() | other.nodes.keys()):
        a, b = clean.nodes.get(node_id), other.nodes.get(node_id)
        if a != b:
            out.append(f"node {node_id}: clean {a!r:.120} / run {b!r:.120}")
    for node_id in sorted(clean.payloads.keys() | other.payloads.keys()):
        if clean.payloads.get(node_id) != other.payloads.get(node_id):
            out.append(f"payload {node_id} differs")
    if clean.points != other.points:
        out.append(f"points per user: clean {clean.points} / run {other.points}")
    if clean.keys != other.keys:
        out.append(f"keys per user: clean {clean.keys} / run {other.keys}")
    for user in sorted(clean.knowledge.keys() | other.knowledge.keys()):
        if clean.knowledge.get(user) != other.knowledge.get(user):
            out.append(f"facts or entities of {user} differ")
    return out
