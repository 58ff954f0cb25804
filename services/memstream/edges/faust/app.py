"""The Faust application: agents that take records in batches and hand them to a handler.

Agents hold no logic. Each record is decoded once, here (`decoding`): a record that is not a
valid event of its topic goes to the dead-letter topic and the handler gets the rest, as
domain events paired with their records. Faust commits a record's offset once the agent
has moved past it, so an agent moves past a batch only when it is handled or dead-lettered:
outages (a store or the broker unreachable) are retried until they end, and a batch that
fails for any other reason is split in halves until the records at fault are alone; a
record alone is retried for at most `retry_budget_s`, then goes to the dead-letter topic with
the error. So a poison record costs its batch about two more passes plus that budget, not a
pass per record. Nothing is skipped silently and every dead letter, whichever path sent it,
is counted. Both topics are keyed by user, so each user's records are handled in order even
with several workers in the group.

An agent whose loop dies anyway is recorded in `AgentHealth`, which the liveness probe
reads: a worker that stopped consuming must not look alive.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any, Protocol, TypeVar

import faust
import redis.exceptions
from aiokafka import AIOKafkaConsumer
from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError

from memstream.contracts.catalog import TopicSpec
from memstream.contracts.codec import decode_input, decode_window
from memstream.contracts.records import Consumed, RawEvent
from memstream.edges.faust.decoding import (
    Rejected,
    in_tenants_topics,
    record_decoder,
    too_far_ahead,
)
from memstream.edges.faust.overflow import OverflowConsumer, Places, TurnsReader
from memstream.edges.faust.overrides import NoTablesManager, bound_fetch_wait, take_batches
from memstream.edges.faust.skipped import SkippedByTopic, SkippedRecords
from memstream.edges.faust.spare import SpareCapacity
from memstream.edges.faust.topic_pauses import TopicPauses
from memstream.edges.startup import phase
from memstream.metrics import Metrics, dlq_category

log = logging.getLogger(__name__)

E = TypeVar("E")
T = TypeVar("T")
RecordHandler = Callable[[list[Consumed[Any]]], Awaitable[object]]
Decoder = Callable[[RawEvent], Consumed[Any] | Rejected]
# Opens a batch's sealed records before decoding (`edges.faust.sealed_turns`): per record,
# the record to decode, a rejection, None for one to drop (its user was forgotten), or a
# record the opening decided without decoding it (`segmenter.fair_share`: sent on to the
# overflow), handed to the handler as it is.
Opening = Callable[
    [Sequence[RawEvent]], Awaitable[Sequence[RawEvent | Rejected | Consumed[Any] | None]]
]


class DeadLetter(Protocol):
    """Sends a record to the dead-letter topic (`DeadLetters.send`)."""

    def __call__(
        self, raw: RawEvent, reason: str, field_path: str | None = None
    ) -> Awaitable[None]: ...


class BatchTracing(Protocol):
    """Spans around a batch and its phases (`edges.tracing.BatchSpans`; None when off)."""

    def batch(self, stage: str, raws: Sequence[RawEvent]) -> AbstractContextManager[None]: ...

    def phase(self, name: str) -> AbstractContextManager[None]: ...


# Errors that mean "a dependency is down", not "this record is bad": wait and try again.
# A Redis Cluster mending itself after it lost a primary counts (until a replica has taken
# over, it answers CLUSTERDOWN or TRYAGAIN, and the cluster client gives up with ClusterError).
OUTAGES: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ClusterError,
    redis.exceptions.TryAgainError,
    redis.exceptions.SlotNotCoveredError,
    KafkaConnectionError,
    KafkaTimeoutError,
    ConnectionError,
    TimeoutError,
)
# The same errors of the HTTP clients (a Qdrant server, an OpenAI-compatible endpoint): looked
# up once the client is loaded, so that a worker that uses neither does not import them at
# start-up (qdrant-client alone is most of a second of CPU). A client not loaded raised nothing.
_CLIENT_OUTAGES = (
    ("qdrant_client.http.exceptions", "ResponseHandlingException"),
    ("httpx", "TransportError"),
)


def outages() -> tuple[type[BaseException], ...]:
    """`OUTAGES` and the outage errors of the HTTP clients this process has loaded."""
    found = []
    for module, name in _CLIENT_OUTAGES:
        if (loaded := sys.modules.get(module)) is not None:
            found.append(getattr(loaded, name))
    return OUTAGES + tuple(found)


FAILED_ATTEMPTS = 3
BACKOFF_S = (0.5, 30.0)  # first and longest wait between attempts
RETRY_BUDGET_S = 10.0  # the most time one record's failures may take before its dead letter
# A batch goes once no record has come for this long (see `take`): fetched records reach
# the stream within milliseconds, so this only needs to outlast a fetch round trip. Any more
# is waited by every turn of a batch whose handler is free, while a busy handler gathers
# the next batch anyway (read-your-writes waits for the step a turn lands in).
BATCH_IDLE_S = 0.01


class AgentHealth:
    """Which agents of the app have died, and of what (read by the liveness probe)."""

    def __init__(self) -> None:
        self.dead: dict[str, str] = {}

    @property
    def alive(self) -> bool:
        return not self.dead

    def died(self, agent: str, error: BaseException) -> None:
        self.dead[agent] = f"{type(error).__name__}: {error}"[:200]


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
    retry_budget_s: float = RETRY_BUDGET_S,
    max_event_skew_s: float | None = None,
    health: AgentHealth | None = None,
    tracing: BatchTracing | None = None,
    open_turns: Opening | None = None,
    overflow: Overflow | None = None,
    read_back_skipped: bool = False,
    tenant_turns: Mapping[str, str] | None = None,
    pauses: TopicPauses | None = None,
    **options: Any,
) -> faust.App:
    """A Faust app with an agent for each topic whose handler is given; with `metrics`, the
    records it dead-letters are counted; with `health`, an agent that dies is recorded; with
    `max_event_skew_s`, input events dated further ahead of the clock are dead-lettered; with
    `tracing`, each batch runs in a span of its own; with `open_turns`, the turns sealed by
    their producers are opened before they are decoded; with `overflow` (and `on_turns`),
    a consumer takes the segmenter's overflow topic with the capacity the turns leave spare
    (its records opened as the turns are); with `read_back_skipped`, turns the consumer
    stepped over are read back into their batch (`edges.faust.skipped`); with `tenant_turns`
    (the tenants' turns topics and their tenants, `contracts.tenant_topics`), the turns agent
    reads those too (a record there naming another tenant's user is dead-lettered),
    and with `pauses` it stops fetching a topic whose tenant is over its share
    (`edges.faust.topic_pauses`)."""
    admit = too_far_ahead(timedelta(seconds=max_event_skew_s)) if max_event_skew_s else None
    app = faust.App(
        app_id,
        broker=f"kafka://{bootstrap}",
        value_serializer="raw",
        key_serializer="raw",
        web_enabled=False,
        topic_disable_leader=True,
        # memstream's state lives in Redis, so Faust keeps no tables or local data of its own.
        store="memory://",
        TableManager=NoTablesManager,
        consumer_auto_offset_reset="earliest",
        topic_allow_declare=False,
        broker_commit_every=batch_size,
        broker_commit_interval=1.0,
        **options,
    )
    bound_fetch_wait(app, fetch_max_wait_ms, eager=pauses is None)
    tenant_turns = tenant_turns or {}
    turns_decoder = record_decoder(turns, decode_input, admit)
    if tenant_turns:
        turns_decoder = in_tenants_topics(turns_decoder, tenant_turns)
    agents: tuple[tuple[str, TopicSpec, Decoder, RecordHandler | None, Opening | None], ...] = (
        ("segmenter", turns, turns_decoder, on_turns, open_turns),
        ("consolidator", windows, record_decoder(windows, decode_window), on_windows, None),
    )
    turns_topics = (turns.name, *tenant_turns)
    health = health or AgentHealth()
    spare = overflow.spare if overflow is not None and on_turns is not None else None
    for name, spec, decoder, handler, opening in agents:
        if handler is not None:
            counted = rejection_counter(metrics, ingested=name == "segmenter")
            _add_agent(
                app,
                f"{app_id}-{name}",
                turns_topics if name == "segmenter" else (spec.name,),
                decoder,
                handler,
                dead_letter,
                counted,
                _Batching(batch_size, batch_within_s, retry_budget_s),
                health,
                tracing,
                opening,
                _Priority(spare) if spare and name == "segmenter" else None,
                # Turns come from many producers at once: what the consumer stepped over
                # is read back (`edges.faust.skipped`).
                SkippedByTopic({t: skipped_records(bootstrap, t) for t in turns_topics})
                if read_back_skipped and name == "segmenter"
                else None,
                pauses if name == "segmenter" else None,
            )
    if overflow is not None and spare is not None:
        _add_overflow(
            app,
            f"{app_id}-overflow",
            bootstrap,
            overflow,
            turns.name,
            # Its records are the turns topic's, read back at their places.
            record_decoder(turns, decode_input, admit),
            rejection_counter(metrics, ingested=True),
            retry_budget_s,
            health,
            tracing,
        )
    return app


@dataclass(frozen=True)
class Overflow:
    """The segmenter's overflow topic (`segmenter.fair_share`): its own handler, batches of
    at most `batch_size` (what one overflow batch may hold the main path up by), and the
    `spare` capacity it waits for; its dead letters go through `dead_letter`."""

    topic: TopicSpec
    handler: RecordHandler
    dead_letter: DeadLetter
    spare: SpareCapacity
    # Strikes a batch's places off their users' overflow ledgers once the batch is done,
    # records the opening dropped (a forgotten user's sealed turns) included.
    struck_off: Callable[[Places], Awaitable[None]]
    opening: Opening | None = None  # sealed turns are opened as on the turns topic
    batch_size: int = 16
    # Options of its Kafka consumer (aiokafka's names): the group membership timeouts.
    consumer_options: Mapping[str, Any] = field(default_factory=dict)


def _add_overflow(
    app: faust.App,
    name: str,
    bootstrap: str,
    overflow: Overflow,
    turns_topic: str,
    decoder: Decoder,
    on_rejected: Callable[[Rejected], None],
    retry_budget_s: float,
    health: AgentHealth,
    tracing: BatchTracing | None,
) -> None:
    """The overflow's consumer, run as a task of the app (`edges.faust.overflow`)."""

    async def consume(raws: list[RawEvent]) -> None:
        with tracing.batch("overflow", raws) if tracing else nullcontext():
            await consume_batch(
                raws,
                decoder,
                overflow.handler,
                overflow.dead_letter,
                on_rejected,
                retry_budget_s=retry_budget_s,
                tracing=tracing,
                opening=overflow.opening,
            )

    consumer = OverflowConsumer(
        topic=overflow.topic.name,
        turns_topic=turns_topic,
        bootstrap=bootstrap,
        group=name,
        consume=consume,
        struck_off=overflow.struck_off,
        spare=overflow.spare,
        batch_size=overflow.batch_size,
        consumer_options=dict(overflow.consumer_options),
    )

    @app.task
    async def drain_overflow() -> None:
        try:
            await consumer.run()
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.critical("the overflow consumer %s died: %r", name, error, exc_info=True)
            health.died(name, error)
            raise


def skipped_records(bootstrap: str, topic: str) -> SkippedRecords:
    """The turns agent's reader of what its consumer stepped over, on `topic`."""

    def reader_consumer() -> AIOKafkaConsumer:
        return AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )

    return SkippedRecords(TurnsReader(topic, reader_consumer))


def _forget_revoked(
    skipped: SkippedByTopic, topics: Sequence[str]
) -> Callable[..., Awaitable[None]]:
    """The app's receiver of revoked partitions (sender, then the set of them): a partition
    back after another worker had it starts from the group's offset, and the offsets that
    worker handled are no skip."""

    async def on_partitions_revoked(_: Any, revoked: Any, **__: Any) -> None:
        for topic in topics:
            skipped.forget(topic, (tp.partition for tp in revoked if tp.topic == topic))

    return on_partitions_revoked


@dataclass(frozen=True)
class _Priority:
    """The turns agent's side of `SpareCapacity`: it marks itself busy around each batch."""

    spare: SpareCapacity


@dataclass(frozen=True, slots=True)
class _Batching:
    size: int
    within_s: float
    retry_budget_s: float
    idle_s: float = BATCH_IDLE_S


def _add_agent(
    app: faust.App,
    name: str,
    topic_names: Sequence[str],
    decoder: Decoder,
    handler: RecordHandler,
    dead_letter: DeadLetter,
    on_rejected: Callable[[Rejected], None],
    batching: _Batching,
    health: AgentHealth,
    tracing: BatchTracing | None,
    opening: Opening | None,
    priority: _Priority | None = None,
    skipped: SkippedByTopic | None = None,
    pauses: TopicPauses | None = None,
) -> None:
    stage = name.rsplit("-", 1)[-1]  # "segmenter" or "consolidator", as the handler's span
    topic = app.topic(*topic_names, key_type=bytes, value_type=bytes)
    if skipped is not None:
        app.on_partitions_revoked.connect(_forget_revoked(skipped, topic_names))
    if pauses is not None:
        app.sensors.add(pauses.sensor(app))

        @app.task
        async def pause_tenants() -> None:
            await pauses.run(app)

    @app.agent(topic, name=name)
    async def consume(stream: faust.StreamT[bytes]) -> None:
        # Events (not values) keep each record's topic, partition, offset and timestamp.
        batches = take_batches(
            stream,
            batching.size,
            within=batching.within_s,
            idle_s=batching.idle_s,
            shown_to=priority.spare.waiting_in if priority is not None else None,
        )
        first = True
        try:
            async for events in batches:
                if first:
                    phase(f"first batch ({stage}, {len(events)} records)")
                    first = False
                raws = list(_raw(events))
                if skipped is not None:
                    raws = await skipped.filled(raws)
                if pauses is not None:
                    raws = pauses.ordered(raws)
                    pauses.tick(app)
                busy = priority.spare.handling() if priority is not None else nullcontext()
                async with busy:
                    with tracing.batch(stage, raws) if tracing else nullcontext():
                        await consume_batch(
                            raws,
                            decoder,
                            handler,
                            dead_letter,
                            on_rejected,
                            retry_budget_s=batching.retry_budget_s,
                            tracing=tracing,
                            opening=opening,
                        )
        except Exception as error:
            log.critical("agent %s died: %r", name, error, exc_info=True)
            health.died(name, error)
            raise
        finally:
            if skipped is not None:
                await asyncio.shield(skipped.close())


async def consume_batch(
    raws: Sequence[RawEvent],
    decoder: Decoder,
    handler: RecordHandler,
    dead_letter: DeadLetter,
    on_rejected: Callable[[Rejected], None],
    *,
    backoff_s: tuple[float, float] = BACKOFF_S,
    retry_budget_s: float = RETRY_BUDGET_S,
    tracing: BatchTracing | None = None,
    opening: Opening | None = None,
) -> None:
    """Decode each record once; dead-letter the invalid ones, deliver the rest.

    `on_rejected` is called once for every dead letter sent, whether the record failed
    decoding or its handler. With `tracing`, the decoding runs in a `validate` span. With
    `opening`, sealed records are opened first (retried while a store is down); what is
    decoded from an opened record keeps the record as it came, for its dead letter.
    """
    opened: Sequence[RawEvent | Rejected | Consumed[Any] | None] = raws
    if opening is not None:
        opened = await _opened(opening, raws, backoff_s)
    with tracing.phase("validate") if tracing else nullcontext():
        results = [_decoded(decoder, raw, item) for raw, item in zip(raws, opened, strict=True)]
    decoded = [d for d in results if d is not None]  # None: dropped by the opening
    rejected = [d for d in decoded if isinstance(d, Rejected)]
    await _dead_letter_all(rejected, dead_letter, on_rejected, backoff_s=backoff_s)
    consumed = [d for d in decoded if not isinstance(d, Rejected)]
    if not consumed:
        return

    async def counted(raw: RawEvent, reason: str, field_path: str | None = None) -> None:
        letter = Rejected(raw, reason, field_path)
        await _dead_letter_all([letter], dead_letter, on_rejected, backoff_s=backoff_s)

    await deliver(handler, consumed, counted, backoff_s=backoff_s, retry_budget_s=retry_budget_s)


def _decoded(
    decoder: Decoder, raw: RawEvent, item: RawEvent | Rejected | Consumed[Any] | None
) -> Consumed[Any] | Rejected | None:
    if item is None or isinstance(item, Rejected | Consumed):
        return item
    result = decoder(item)
    return result if item is raw else replace(result, raw=raw)


async def _opened(
    opening: Opening, raws: Sequence[RawEvent], backoff_s: tuple[float, float]
) -> Sequence[RawEvent | Rejected | Consumed[Any] | None]:
    """`opening` of the batch, retried while a store is down; any other error stops the
    agent (a bug of the opener, not of a record: each record's own fault is a rejection)."""
    result: list[Sequence[RawEvent | Rejected | Consumed[Any] | None]] = []

    async def open_all(batch: Sequence[RawEvent]) -> None:
        result.append(await opening(batch))

    error = await _attempt(open_all, raws, 1, backoff_s)
    if error is not None:
        raise error
    return result[0]


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
    retry_budget_s: float = RETRY_BUDGET_S,
) -> None:
    """Handle a batch; on failure, each half in turn, down to single records; a record that
    still fails after `attempts` tries or `retry_budget_s` seconds is dead-lettered.

    Outages do not count against either bound: they are no record's fault.
    """
    alone = len(batch) == 1
    error = await _attempt(
        handler, batch, attempts if alone else 1, backoff_s, retry_budget_s if alone else None
    )
    if error is None:
        return
    if not alone:
        log.warning("batch of %d failed (%r); splitting it", len(batch), error)
        half = len(batch) // 2
        for part in (batch[:half], batch[half:]):
            await deliver(
                handler,
                part,
                dead_letter,
                attempts=attempts,
                backoff_s=backoff_s,
                retry_budget_s=retry_budget_s,
            )
        return
    poison = batch[0].raw
    log.error("dead-lettering %s/%s@%s: %r", poison.topic, poison.partition, poison.offset, error)
    await dead_letter(poison, f"handler failed: {type(error).__name__}: {error}"[:500])


async def _attempt(
    handler: Callable[[T], Awaitable[object]],
    items: T,
    attempts: int,
    backoff_s: tuple[float, float],
    budget_s: float | None = None,
) -> Exception | None:
    """None once handled; the last error after `attempts` failures that are not outages, or
    once those failures have taken `budget_s` seconds (waits included)."""
    failures = 0
    wait = backoff_s[0]
    spent = 0.0  # time lost to failures, not to outages
    while True:
        started = time.monotonic()
        try:
            await handler(items)
            return None
        except outages() as outage:
            log.warning("dependency unavailable (%r); retrying in %.1f s", outage, wait)
            await asyncio.sleep(wait)
        except Exception as error:
            failures += 1
            spent += time.monotonic() - started
            pause = wait if budget_s is None else min(wait, max(0.0, budget_s - spent))
            if failures >= attempts or (budget_s is not None and spent + pause >= budget_s):
                return error
            log.warning("handler failed (%r), attempt %d of %d", error, failures, attempts)
            await asyncio.sleep(pause)
            spent += pause
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
