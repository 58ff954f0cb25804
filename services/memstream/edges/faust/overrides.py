"""Every place memstream reaches into Faust's internals, in one module.

Each override below replaces a private part of faust-streaming as it is in
`WRITTEN_FOR` (the version pyproject.toml pins); none of them is a public extension point,
so a new Faust may rename, move or change what they replace without a deprecation.
`tests/unit/edges/faust/test_overrides.py` fails when the installed faust-streaming is
another version: re-check each override against the new source (the internal each one
replaces is named in its comment), then update `WRITTEN_FOR`.

1. `BoundedWaitTransport` (`bound_fetch_wait`): the consumers' fetch wait.
2. `NoTablesManager`: the table manager's start-up pause.
3. `take_batches`: `Stream.take_events`, with batches that go when the records stop coming.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

import aiokafka
import faust
from faust.tables import TableManager
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread, Consumer, Transport

from memstream.edges.faust.take import Gathering, gather_until_idle

WRITTEN_FOR = "0.15.3"  # the faust-streaming these overrides were written against


# --- 1. the fetch wait ------------------------------------------------------------------
# Replaces: `AIOKafkaConsumerThread._create_worker_consumer`, which builds the aiokafka
# consumer with `fetch_max_wait_ms=1500` and no setting to change it; reached through
# `Consumer._new_consumer_thread` and the `Transport.Consumer` class attribute. We set the
# consumer's private `_fetch_max_wait_ms` after Faust built it.
#
# Why: a broker may hold an empty fetch for the whole wait even when records arrive
# meanwhile (Tansu does), so a record produced just after a fetch went out waited up to the
# whole 1.5 s before the segmenter saw it: that is L1 latency for a live conversation, and
# the first second of every replay. The wait is the only thing this transport changes.


class _BoundedWaitConsumerThread(AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport: Any) -> aiokafka.AIOKafkaConsumer:
        consumer = super()._create_worker_consumer(transport)
        # Read by the consumer's fetcher when it starts, which happens after this returns.
        consumer._fetch_max_wait_ms = transport.fetch_max_wait_ms
        return consumer


class _BoundedWaitConsumer(Consumer):
    def _new_consumer_thread(self) -> AIOKafkaConsumerThread:
        return _BoundedWaitConsumerThread(self, loop=self.loop, beacon=self.beacon)


class BoundedWaitTransport(Transport):
    Consumer = _BoundedWaitConsumer

    def __init__(self, *args: Any, fetch_max_wait_ms: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fetch_max_wait_ms = fetch_max_wait_ms


def bound_fetch_wait(app: faust.App, fetch_max_wait_ms: int) -> None:
    """Give `app` consumers that wait at most `fetch_max_wait_ms` per fetch (before start)."""
    app.transport = BoundedWaitTransport(
        app.conf.broker_consumer, app, fetch_max_wait_ms=fetch_max_wait_ms
    )


# --- 2. the table manager's start -------------------------------------------------------
# Replaces: `TableManager.on_start`, which sleeps before it updates its channels and starts
# recovery; this one does the same two steps (its private `_update_channels`, then
# `recovery.start()`) without the sleep. Passed to `faust.App(TableManager=...)`.
#
# Why: Faust waits a second at every start for tables to be declared before it subscribes;
# memstream declares none (its state is in Redis), so that second was only a delay before
# the group join.


class NoTablesManager(TableManager):
    """Faust's table manager without its start-up pause."""

    async def on_start(self) -> None:
        if not self.should_stop:
            await self._update_channels()
            await self.recovery.start()


# --- 3. batches of a stream -------------------------------------------------------------
# Replaces: `Stream.take_events(max_, within)`, rebuilt from the same private machinery:
# `Stream.current_event`, `add_processor` and `_processors`, `_enable_passive`,
# `enable_acks` and `ack`, `wait_for_stopped`, `crash`, and `_active_agens` (the generators
# the stream closes when it stops).
#
# Why: `take_events` yields a batch when it holds `max_` events, and otherwise only when
# `within` has passed since it began to wait; and it takes no record in while the caller
# handles a batch. A worker catching up on a backlog smaller than `max_` therefore drained
# the whole backlog through Faust's stream and then waited out the rest of `within` after
# every batch, with the embedding model idle all that time; a live turn waited for it too.
# `take_batches` buffers and acks as `take_events` does (a batch's events are acked only
# when the caller asks for the next batch, that is once it has handled this one), with two
# changes:
#
# - The next batch gathers while the caller handles this one (at most `max_` records wait,
#   unacked, as they would in the consumer's queue), so it is ready when the caller is.
# - A batch goes as soon as no record has come for `idle_s`, or when it is full, or at the
#   latest `within` after its first record (`take.gather_until_idle`).


def take_batches(
    stream: faust.StreamT[Any],
    max_: int,
    *,
    within: float,
    idle_s: float,
    shown_to: Callable[[Gathering], None] | None = None,
) -> AsyncIterator[list[faust.EventT]]:
    """`stream.take_events(max_, within)`, with the two changes above; `shown_to` is given
    the records gathered for the next batch (`spare.SpareCapacity.waiting_in`)."""
    batches = _take(stream, max_, within, idle_s, shown_to)
    # As Faust does for its own: the stream closes a generator left behind when it stops.
    stream._active_agens.add(batches)  # type: ignore[attr-defined]
    return batches


async def _take(
    stream: faust.StreamT[Any],
    max_: int,
    within: float,
    idle_s: float,
    shown_to: Callable[[Gathering], None] | None,
) -> AsyncGenerator[list[faust.EventT], None]:
    s: Any = stream
    clock = asyncio.get_running_loop().time
    gathering = Gathering(max_, clock)
    if shown_to is not None:
        shown_to(gathering)

    async def add_to_buffer(value: Any) -> Any:
        try:
            event = s.current_event
            if event is None:
                raise RuntimeError("take buffer found current_event is None")
            gathering.add(event)
            if gathering.full.is_set():
                await s.wait(gathering.taken)  # never more than max_ in a batch
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            s.log.exception("Error adding to take buffer: %r", exc)
            await s.crash(exc)
        return value

    async def wait(event: asyncio.Event, seconds: float) -> bool:
        return bool(await s.wait_for_stopped(event, timeout=seconds))

    enable_acks = s.enable_acks
    s.enable_acks = False  # acked below, once the caller has handled the batch
    s.add_processor(add_to_buffer)
    s._enable_passive(s.channel.__aiter__())
    try:
        while not s.should_stop:
            await gather_until_idle(gathering, wait, within=within, idle_s=idle_s, clock=clock)
            if not gathering.events:
                continue
            batch = gathering.take()
            try:
                yield batch
            finally:
                for event in batch:
                    await s.ack(event)
    finally:
        s.enable_acks = enable_acks
        s._processors.remove(add_to_buffer)
