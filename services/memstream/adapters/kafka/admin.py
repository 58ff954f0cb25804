"""Broker administration through the Kafka protocol (aiokafka), so it works on any broker:
Apache Kafka, Redpanda, or the embedded Tansu."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError

from memstream.contracts.catalog import TopicSpec

log = logging.getLogger(__name__)

# Kafka protocol error codes this module acts on.
_NO_ERROR = 0
_TOPIC_ALREADY_EXISTS = 36


class TopicCreationError(RuntimeError):
    """The broker refused to create a topic for a reason other than "it already exists"."""


@dataclass(frozen=True, slots=True)
class TopicStatus:
    """What `ensure_topics` found or did for one topic of the catalog."""

    name: str
    state: Literal["created", "exists"]
    partitions: int
    replication_factor: int
    note: str = ""


@asynccontextmanager
async def admin_client(bootstrap: str, *, timeout_s: float = 30.0) -> AsyncIterator[Any]:
    """A started admin client, closed on exit. Typed Any: aiokafka ships no type hints."""
    client = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap, request_timeout_ms=int(timeout_s * 1000)
    )
    await client.start()
    try:
        yield client
    finally:
        await client.close()


class KafkaTopicAdmin:
    """Creates the catalog's topics on a broker; takes a started `AIOKafkaAdminClient`."""

    def __init__(self, client: Any) -> None:
        self._client = client

    async def ensure_topics(self, specs: Sequence[TopicSpec]) -> list[TopicStatus]:
        """Create the topics that are missing; never touch the ones that exist (idempotent)."""
        existing = set(await self._client.list_topics())
        brokers = await self._broker_count()
        created: dict[str, int] = {}
        missing = [spec for spec in specs if spec.name not in existing]
        if missing:
            created = await self._create(missing, brokers)
        described = await self._partitions([spec.name for spec in specs])
        statuses = []
        for spec in specs:
            partitions, replicas = described.get(spec.name, (0, 0))
            note = ""
            if spec.name in created and created[spec.name] < spec.replication_factor:
                note = f"replication {created[spec.name]}: the cluster has {brokers} broker(s)"
            elif spec.name not in created and partitions != spec.partitions:
                note = f"catalog says {spec.partitions} partitions"
            state: Literal["created", "exists"] = "created" if spec.name in created else "exists"
            statuses.append(TopicStatus(spec.name, state, partitions, replicas, note))
        return statuses

    async def _create(self, specs: Sequence[TopicSpec], brokers: int) -> dict[str, int]:
        # The catalog states the production replication factor; a smaller cluster (a single
        # dev broker) cannot honour it, so cap it and say so rather than fail.
        factors = {spec.name: min(spec.replication_factor, max(brokers, 1)) for spec in specs}
        request = [
            NewTopic(spec.name, spec.partitions, factors[spec.name], topic_configs=spec.configs)
            for spec in specs
        ]
        response = await self._client.create_topics(request)
        created = {}
        for entry in response.topic_errors:  # (name, code[, message]) by protocol version
            name, code = entry[0], entry[1]
            message = entry[2] if len(entry) > 2 else ""
            if code == _NO_ERROR:
                created[name] = factors[name]
            elif code != _TOPIC_ALREADY_EXISTS:  # lost a race with another creator: fine
                raise TopicCreationError(f"{name}: error {code}: {message}")
        return created

    async def _broker_count(self) -> int:
        cluster = await self._client.describe_cluster()
        return len(cluster.get("brokers", ()))

    async def _partitions(self, names: list[str]) -> dict[str, tuple[int, int]]:
        found = {}
        for topic in await self._client.describe_topics(names):
            partitions = topic.get("partitions", [])
            replicas = len(partitions[0]["replicas"]) if partitions else 0
            found[topic["topic"]] = (len(partitions), replicas)
        return found


async def ensure_topics(
    bootstrap: str, specs: Sequence[TopicSpec], *, timeout_s: float = 30.0
) -> list[TopicStatus]:
    """Connect, create what is missing, disconnect."""
    async with admin_client(bootstrap, timeout_s=timeout_s) as client:
        return await KafkaTopicAdmin(client).ensure_topics(specs)


async def wait_for_broker(
    bootstrap: str, *, timeout_s: float, alive: Callable[[], bool] = lambda: True
) -> None:
    """Return once the broker answers a Kafka metadata request; a listening socket is not
    enough (the process may accept before it serves). `alive` lets a caller fail fast when
    the broker process died instead of waiting out the whole deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    host, _, port = bootstrap.rpartition(":")
    while True:
        if not alive():
            raise RuntimeError(f"the broker at {bootstrap} exited while starting")
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise TimeoutError(f"no Kafka broker answered at {bootstrap} in {timeout_s:.0f}s")
        try:
            # Probe the socket first: aiokafka logs an error for every refused bootstrap.
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 1.0)
            writer.close()
            await writer.wait_closed()
            async with admin_client(bootstrap, timeout_s=min(remaining, 5.0)) as client:
                await client.describe_cluster()
            return
        except (OSError, TimeoutError, KafkaError) as exc:
            log.debug("broker %s not ready yet: %s", bootstrap, exc)
        await asyncio.sleep(0.05)
