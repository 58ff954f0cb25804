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
4. `EagerDrainConsumer`: the consumer's delivery of each fetched record to the streams.
5. `_BoundedWaitConsumerThread.verify_event_path`: the livelock check of a paused partition.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, cast

import aiokafka
import faust
from faust.tables import TableManager
from faust.transport.consumer import CONSUMER_FETCHING
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread, Consumer, Transport
from faust.types import TP, ServiceT

from memstream.edges.faust.eager import started
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

    def verify_event_path(self, now: float, tp: TP) -> None:
        # 5. below.
        if aiokafka.TopicPartition(tp.topic, tp.partition) in self._ensure_consumer().paused():
            return None
        return super().verify_event_path(now, tp)


class _BoundedWaitConsumer(Consumer):
    def _new_consumer_thread(self) -> AIOKafkaConsumerThread:
        return _BoundedWaitConsumerThread(self, loop=self.loop, beacon=self.beacon)


class BoundedWaitTransport(Transport):
    Consumer = _BoundedWaitConsumer

    def __init__(self, *args: Any, fetch_max_wait_ms: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fetch_max_wait_ms = fetch_max_wait_ms


def bound_fetch_wait(app: faust.App, fetch_max_wait_ms: int, *, eager: bool = True) -> None:
    """Give `app` consumers that wait at most `fetch_max_wait_ms` per fetch (before start),
    and, with `eager`, that deliver each record without tasks when nothing makes it wait
    (4. below). Not with the tenants' topics paused (`edges.faust.topic_pauses`): those
    pauses are decided between deliveries, and ten deliveries in a row let a flooding
    tenant's fetch through before its pause (the integration test's paused tenant had 644
    of its 1,000 turns written beside the quiet one, against fewer than half)."""
    transport = _EagerDrainTransport if eager else BoundedWaitTransport
    app.transport = transport(app.conf.broker_consumer, app, fetch_max_wait_ms=fetch_max_wait_ms)


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


# --- 4. delivering fetched records ------------------------------------------------------
# Replaces: `Consumer._drain_messages` (faust/transport/consumer.py), the loop that takes
# each fetched record to the streams, copied with two changes. It uses the consumer's private
# `_read_offset`, `_n_acked`, `_commit_every`, `_add_gap`, `suspend_flow`, `diag` and
# `consumer_stopped_errors`, mode's `_stopped` and `_crashed`; it is reached through
# `Transport.Consumer`.
#
# Why: Faust delivers every record as `wait_first(callback(message),
# suspend_flow.wait())`: four tasks (the delivery, and waits on the flow's suspension, the
# consumer's stop and its crash), an `asyncio.wait` over them, and three cancellations, so
# that a rebalance or a stop can interrupt a delivery stuck behind a full stream buffer. A
# delivery nearly always finishes without waiting at all. Here it is run at once
# (`eager.started`) while the flow is on and the consumer neither stopping nor crashed;
# only a delivery that does wait is awaited as Faust awaits it, `wait_first` and all, and
# with the flow suspended or the consumer stopping every record goes Faust's way. The
# records, their order, the read offsets, gaps and commits are as before; what changes is
# that a delivery that does not wait no longer gives the loop to other tasks. So the second
# change: the loop yields every `YIELD_EVERY` records, not every 100 as Faust's (whose
# deliveries yielded at every record anyway): 100 deliveries in a row would hold back the
# loop's other callbacks (the texts going to the model, its vectors coming back) for
# milliseconds at a time.

YIELD_EVERY = 10


class EagerDrainConsumer(_BoundedWaitConsumer):
    """The bounded-wait consumer whose deliveries to the streams run at once."""

    async def _drain_messages(self, fetcher: ServiceT) -> None:  # Faust's, 2 changes
        me: Any = self
        callback = me.callback
        getmany = me.getmany
        consumer_should_stop = me._stopped.is_set
        fetcher_should_stop = cast(Any, fetcher)._stopped.is_set
        crashed = me._crashed.is_set
        suspended = me.suspend_flow.is_set

        get_read_offset = me._read_offset.__getitem__
        set_read_offset = me._read_offset.__setitem__
        flag_consumer_fetching = CONSUMER_FETCHING
        set_flag = me.diag.set_flag
        unset_flag = me.diag.unset_flag
        commit_every = me._commit_every
        acks_enabled_for = me.app.topics.acks_enabled_for

        yield_every = YIELD_EVERY
        num_since_yield = 0
        sleep = asyncio.sleep

        try:
            while not (consumer_should_stop() or fetcher_should_stop()):
                set_flag(flag_consumer_fetching)
                ait = cast(AsyncIterator[Any], getmany(timeout=1.0))

                # Sleeping because sometimes getmany is called in a loop
                # never releasing to the event loop
                await me.sleep(0)
                if not me.should_stop:
                    async for tp, message in ait:
                        num_since_yield += 1
                        if num_since_yield > yield_every:
                            await sleep(0)
                            num_since_yield = 0

                        offset = message.offset
                        r_offset = get_read_offset(tp)
                        if r_offset is None or offset >= r_offset:
                            gap = offset - (r_offset or 0)
                            # We have a gap in income messages
                            if gap > 1 and r_offset:
                                acks_enabled = acks_enabled_for(message.topic)
                                if acks_enabled:
                                    await me._add_gap(tp, r_offset + 1, offset)
                            if commit_every is not None and me._n_acked >= commit_every:
                                me._n_acked = 0
                                await me.commit()
                            # The first change: see the comment above the class.
                            if suspended() or consumer_should_stop() or crashed():
                                await me.wait_first(callback(message), me.suspend_flow.wait())
                            elif (waiting := started(callback(message))) is not None:
                                await me.wait_first(waiting, me.suspend_flow.wait())
                            set_read_offset(tp, offset)
                        else:
                            me.log.dev(
                                "DROPPED MESSAGE ROFF %r: k=%r v=%r",
                                offset,
                                message.key,
                                message.value,
                            )
                    unset_flag(flag_consumer_fetching)

        except me.consumer_stopped_errors:
            if me.transport.app.should_stop:
                # we're already stopping so ignore
                me.log.info("Broker stopped consumer, shutting down...")
                return
            raise
        except asyncio.CancelledError:
            if me.transport.app.should_stop:
                # we're already stopping so ignore
                me.log.info("Consumer shutting down for user cancel.")
                return
            raise
        except Exception as exc:
            me.log.exception("Drain messages raised: %r", exc)
            raise
        finally:
            unset_flag(flag_consumer_fetching)


class _EagerDrainTransport(BoundedWaitTransport):
    Consumer = EagerDrainConsumer


# --- 5. the livelock check of a paused partition -------------------------------------------
# Replaces: `AIOKafkaConsumerThread.verify_event_path`, which Faust calls for every assigned
# partition every few seconds; for a paused one it returns at once, and otherwise it runs
# Faust's own check. It uses the private `_ensure_consumer`.
#
# Why: the check logs an error that asks to be reported as a Faust bug when a partition has
# records past the consumer's position and no commit for `broker_commit_livelock_soft_timeout`
# (or no fetch for a while). A tenant's turns topic paused over its share
# (`edges.faust.topic_pauses`) is exactly that by design: its backlog waits in the log, and
# a partition of it idle for five minutes before a flood reached it was reported at once
# (twice in a fairness run). A paused partition is not being fetched on purpose; its lag is
# in the consumer group's lag all the same (`memstream_consumer_lag_messages`).
