"""The Faust application: agents that take records in batches and hand them to a handler.

Agents hold no logic. Each record is decoded once, here (`decoding`): a record that is not a
valid event of its topic goes to the dead-letter topic and the handler gets the rest, as
domain events paired with their records. Faust commits a record's offset once the agent
has moved past it, so an agent moves past a batch only when it is handled or dead-lettered:
outages (a store or the broker unreachable) are retried until they end, and a batch that
keeps failing for any other reason is retried record by record, the records that still fail
going to the dead-letter topic with the error. Nothing is skipped silently. Both topics are
keyed by user, so each user's records are handled in order even with several workers in
the group.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

import faust
import httpx
import redis.exceptions
from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError
from qdrant_client.http.exceptions import ResponseHandlingException

from memstream.contracts.catalog import TopicSpec
from memstream.contracts.codec import decode_input, decode_window
from memstream.contracts.records import Consumed, RawEvent
from memstream.edges.faust.decoding import Rejected, record_decoder
from memstream.edges.faust.fetch import bound_fetch_wait
from memstream.metrics import Metrics, dlq_category

log = logging.getLogger(__name__)

E = TypeVar("E")
T = TypeVar("T")
RecordHandler = Callable[[list[Consumed[Any]]], Awaitable[object]]
Decoder = Callable[[RawEvent], Consumed[Any] | Rejected]


class DeadLetter(Protocol):
    """Sends a record to the dead-letter topic (`DeadLetters.send`)."""

    def __call__(
        self, raw: RawEvent, reason: str, field_path: str | None = None
    ) -> Awaitable[None]: ...


# Errors that mean "a dependency is down", not "this record is bad": wait and try again.
OUTAGES: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    KafkaConnectionError,
    KafkaTimeoutError,
    ResponseHandlingException,
    httpx.TransportError,
    ConnectionError,
    TimeoutError,
)
FAILED_ATTEMPTS = 3
BACKOFF_S = (0.5, 30.0)  # first and longest wait between attempts


def build_faust_app(
    *,
    app_id: str,
    bootstrap: str,
    turns: TopicSpec,
    windows: TopicSpec,
    on_turns: RecordHandler | None,
    on_windows: RecordHandler | None,
    dead_letter: DeadLetter,
    metrics: Metrics | None = None,
    batch_size: int = 1024,
    batch_within_s: float = 0.25,
    fetch_max_wait_ms: int = 100,
    **options: Any,
) -> faust.App:
    """A Faust app with an agent for each topic whose handler is given; with `metrics`, the
    records it dead-letters at decoding are counted."""
    app = faust.App(
        app_id,
        broker=f"kafka://{bootstrap}",
        value_serializer="raw",
        key_serializer="raw",
        web_enabled=False,
        topic_disable_leader=True,
        # memstream's state lives in Redis, so Faust keeps no tables or local data of its own.
        store="memory://",
        consumer_auto_offset_reset="earliest",
        topic_allow_declare=False,
        broker_commit_every=batch_size,
        broker_commit_interval=1.0,
        **options,
    )
    bound_fetch_wait(app, fetch_max_wait_ms)
    agents: tuple[tuple[str, TopicSpec, Decoder, RecordHandler | None], ...] = (
        ("segmenter", turns, record_decoder(turns, decode_input), on_turns),
        ("consolidator", windows, record_decoder(windows, decode_window), on_windows),
    )
    for name, spec, decoder, handler in agents:
        if handler is not None:
            counted = rejection_counter(metrics, ingested=name == "segmenter")
            _add_agent(
                app,
                f"{app_id}-{name}",
                spec.name,
                decoder,
                handler,
                dead_letter,
                counted,
                batch_size,
                batch_within_s,
            )
    return app


def _add_agent(
    app: faust.App,
    name: str,
    topic_name: str,
    decoder: Decoder,
    handler: RecordHandler,
    dead_letter: DeadLetter,
    on_rejected: Callable[[Rejected], None],
    batch_size: int,
    within_s: float,
) -> None:
    topic = app.topic(topic_name, key_type=bytes, value_type=bytes)

    @app.agent(topic, name=name)
    async def consume(stream: faust.StreamT[bytes]) -> None:
        # take_events (not take) keeps each record's topic, partition, offset and timestamp.
        batches = stream.take_events(batch_size, within=within_s)  # type: ignore[attr-defined]
        async for events in batches:
            await consume_batch(list(_raw(events)), decoder, handler, dead_letter, on_rejected)


async def consume_batch(
    raws: Sequence[RawEvent],
    decoder: Decoder,
    handler: RecordHandler,
    dead_letter: DeadLetter,
    on_rejected: Callable[[Rejected], None],
    *,
    backoff_s: tuple[float, float] = BACKOFF_S,
) -> None:
    """Decode each record once; dead-letter the invalid ones, deliver the rest."""
    decoded = [decoder(raw) for raw in raws]
    rejected = [d for d in decoded if isinstance(d, Rejected)]
    await _dead_letter_all(rejected, dead_letter, on_rejected, backoff_s=backoff_s)
    consumed = [d for d in decoded if not isinstance(d, Rejected)]
    if consumed:
        await deliver(handler, consumed, dead_letter, backoff_s=backoff_s)


async def _dead_letter_all(
    rejected: Sequence[Rejected],
    dead_letter: DeadLetter,
    on_rejected: Callable[[Rejected], None],
    *,
    backoff_s: tuple[float, float] = BACKOFF_S,
) -> None:
    """Dead-letter the records that did not decode, retrying while the broker is down."""
    if not rejected:
        return

    async def send_all(letters: Sequence[Rejected]) -> None:
        for letter in letters:
            await dead_letter(letter.raw, letter.reason, letter.field_path)

    error = await _attempt(send_all, rejected, FAILED_ATTEMPTS, backoff_s)
    if error is not None:
        raise error  # the dead-letter topic itself fails: stop rather than drop records
    for letter in rejected:
        raw = letter.raw
        log.warning(
            "dead-lettered %s/%s@%s: %s", raw.topic, raw.partition, raw.offset, letter.reason
        )
        on_rejected(letter)


def rejection_counter(metrics: Metrics | None, *, ingested: bool) -> Callable[[Rejected], None]:
    """Counts dead-lettered records by reason category (and, for turns, as ingested)."""

    def count(letter: Rejected) -> None:
        if metrics is None:
            return
        metrics.dlq_events.labels(dlq_category(letter.reason)).inc()
        if ingested:  # the ingest outcomes count the turns topic only
            metrics.ingested.labels("dead_letter").inc()

    return count


async def deliver(
    handler: Callable[[list[Consumed[E]]], Awaitable[object]],
    batch: list[Consumed[E]],
    dead_letter: DeadLetter,
    *,
    attempts: int = FAILED_ATTEMPTS,
    backoff_s: tuple[float, float] = BACKOFF_S,
) -> None:
    """Handle a batch; on repeated failure, each record alone; dead-letter what still fails."""
    error = await _attempt(handler, batch, attempts, backoff_s)
    if error is None:
        return
    if len(batch) > 1:
        log.warning("batch of %d failed (%r); retrying record by record", len(batch), error)
        for one in batch:
            await deliver(handler, [one], dead_letter, attempts=attempts, backoff_s=backoff_s)
        return
    poison = batch[0].raw
    log.error("dead-lettering %s/%s@%s: %r", poison.topic, poison.partition, poison.offset, error)
    await dead_letter(poison, f"handler failed: {type(error).__name__}: {error}"[:500])


async def _attempt(
    handler: Callable[[T], Awaitable[object]],
    items: T,
    attempts: int,
    backoff_s: tuple[float, float],
) -> Exception | None:
    """None once handled; the last error after `attempts` failures that are not outages."""
    failures = 0
    wait = backoff_s[0]
    while True:
        try:
            await handler(items)
            return None
        except OUTAGES as outage:
            log.warning("dependency unavailable (%r); retrying in %.1f s", outage, wait)
        except Exception as error:
            failures += 1
            if failures >= attempts:
                return error
            log.warning("handler failed (%r), attempt %d of %d", error, failures, attempts)
        await asyncio.sleep(wait)
        wait = min(wait * 2, backoff_s[1])


def _raw(events: Iterable[faust.EventT]) -> Iterable[RawEvent]:
    for event in events:
        message = event.message
        value = message.value if isinstance(message.value, bytes) else bytes(message.value or b"")
        stamp = message.timestamp  # Kafka gives epoch seconds here (Faust converts ms)
        headers = _headers(message.headers)
        yield RawEvent(
            value, message.topic, message.partition, message.offset, stamp or None, headers
        )


def _headers(given: Any) -> tuple[tuple[str, bytes], ...]:
    # Kept for tracing: the producer's trace context travels in a `traceparent` header.
    pairs = given.items() if isinstance(given, dict) else (given or ())
    return tuple((str(name), bytes(data)) for name, data in pairs)
