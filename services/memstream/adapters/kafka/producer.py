"""Publishing JSON events, keyed by user, with delivery confirmed before we move on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiokafka import AIOKafkaProducer
from opentelemetry import propagate  # imported here: a slow import, not for the first publish

from memstream.contracts.records import Forwarded, Outbound, encode_value

# Every publish awaits its acks, so a linger only holds back the sends of an idle producer:
# the services' publisher does not linger (one publish call's records are queued before the
# sender runs, and what comes while a request is in flight goes in the next, so it batches
# as well without). The command-line tools and the benchmarks' own producers keep theirs,
# so that what a benchmark offers stays what it was.
SERVICE_LINGER_MS = 0
TOOL_LINGER_MS = 5


def trace_headers() -> list[tuple[str, bytes]] | None:
    """The current trace context as record headers, so a consumer's span joins the trace
    of the work that published (none outside a span)."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return [(name, value.encode()) for name, value in carrier.items()] or None


class KafkaPublisher:
    """Sends a batch and waits until the broker has acknowledged every message."""

    def __init__(self, producer: AIOKafkaProducer) -> None:
        self._producer = producer

    @classmethod
    def for_bootstrap(
        cls, bootstrap: str, *, linger_ms: int = TOOL_LINGER_MS, **options: Any
    ) -> KafkaPublisher:
        return cls(
            AIOKafkaProducer(
                bootstrap_servers=bootstrap, acks="all", linger_ms=linger_ms, **options
            )
        )

    @classmethod
    def for_service(cls, bootstrap: str) -> KafkaPublisher:
        """The publisher of a worker or an API process: no linger (see `SERVICE_LINGER_MS`)."""
        return cls.for_bootstrap(bootstrap, linger_ms=SERVICE_LINGER_MS)

    @property
    def producer(self) -> AIOKafkaProducer:
        return self._producer

    async def start(self) -> None:
        await self._producer.start()

    async def stop(self) -> None:
        await self._producer.stop()

    async def publish(self, events: Sequence[Outbound]) -> None:
        headers = trace_headers()
        futures = [
            await self._producer.send(
                e.topic, key=e.key.encode(), value=encode_value(e.value), headers=headers
            )
            for e in events
        ]
        for future in futures:
            await future

    async def forward(self, records: Sequence[Forwarded]) -> None:
        futures = [
            await self._producer.send(
                r.topic,
                key=r.key.encode(),
                value=r.value,
                headers=r.headers(),
                partition=r.partition,
            )
            for r in records
        ]
        for future in futures:
            await future

    async def send_raw(self, topic: str, key: bytes | None, value: bytes) -> None:
        await self._producer.send_and_wait(topic, key=key, value=value)
