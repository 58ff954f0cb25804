"""The Faust overrides are for the faust-streaming they were written against.

They replace private parts of Faust (`edges/faust/overrides.py`), which a new version may
change without notice: these tests make a version change a decision, not an accident.
"""

from __future__ import annotations

import logging
import time
from importlib.metadata import version
from types import SimpleNamespace

import faust
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from faust.streams import Stream
from faust.tables import TableManager
from faust.transport.consumer import Consumer as FaustConsumer
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread, Consumer, Transport
from faust.types import TP

from memstream.edges.faust import overrides


def test_the_installed_faust_is_the_one_the_overrides_were_written_for() -> None:
    installed = version("faust-streaming")
    assert installed == overrides.WRITTEN_FOR, (
        f"faust-streaming is {installed}, but the overrides in "
        f"services/memstream/edges/faust/overrides.py were written for "
        f"{overrides.WRITTEN_FOR}. Re-check each override against the new Faust source: "
        "AIOKafkaConsumerThread._create_worker_consumer (does it still hard-code "
        "fetch_max_wait_ms?), Consumer._new_consumer_thread, TableManager.on_start (is the "
        "start-up sleep still there, are _update_channels and recovery still its steps?), "
        "Stream.take_events with the internals take_batches uses, and Consumer._drain_messages "
        "(EagerDrainConsumer copies it with one change); then set WRITTEN_FOR to the new "
        "version."
    )


# The private names each override calls or replaces, by the class that has them in
# `WRITTEN_FOR`: a missing one would fail only at run time, in a worker.
INTERNALS = [
    (AIOKafkaConsumerThread, "_create_worker_consumer"),
    (AIOKafkaConsumerThread, "verify_event_path"),
    (AIOKafkaConsumerThread, "_ensure_consumer"),
    (Consumer, "_new_consumer_thread"),
    (Transport, "Consumer"),
    (TableManager, "on_start"),
    (TableManager, "_update_channels"),
    (Stream, "take_events"),
    (Stream, "add_processor"),
    (Stream, "_enable_passive"),
    (Stream, "wait_for_stopped"),
    (Stream, "ack"),
    (Stream, "crash"),
    (FaustConsumer, "_drain_messages"),
    (FaustConsumer, "_add_gap"),
    (FaustConsumer, "commit"),
    (FaustConsumer, "wait_first"),
]


@pytest.mark.parametrize(("owner", "name"), INTERNALS, ids=lambda x: getattr(x, "__name__", x))
def test_the_internals_the_overrides_use_are_there(owner: type, name: str) -> None:
    assert hasattr(owner, name), (
        f"{owner.__module__}.{owner.__name__}.{name} is gone: the Faust overrides in "
        "services/memstream/edges/faust/overrides.py need re-writing for this faust-streaming"
    )


def test_the_overrides_replace_what_they_name() -> None:
    assert issubclass(overrides.BoundedWaitTransport.Consumer, Consumer)
    assert overrides.EagerDrainConsumer._drain_messages is not FaustConsumer._drain_messages
    assert overrides.NoTablesManager.on_start is not TableManager.on_start


def test_an_app_built_by_memstream_drains_with_the_eager_consumer() -> None:
    app = faust.App("overrides-test", broker="kafka://127.0.0.1:1", web_enabled=False)
    overrides.bound_fetch_wait(app, 100)
    assert app.transport.Consumer is overrides.EagerDrainConsumer


def test_with_the_tenants_topics_paused_an_app_drains_as_faust_does() -> None:
    # Pauses are decided between deliveries; ten in a row let a flood's fetch through.
    app = faust.App("overrides-test-paused", broker="kafka://127.0.0.1:1", web_enabled=False)
    overrides.bound_fetch_wait(app, 100, eager=False)
    assert app.transport.Consumer is overrides.BoundedWaitTransport.Consumer
    assert app.transport.fetch_max_wait_ms == 100


async def test_a_paused_partition_is_not_reported_as_a_livelock(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A tenant's turns topic paused over its share keeps a backlog and no commit on purpose.
    app = faust.App("overrides-test-livelock", broker="kafka://127.0.0.1:1", web_enabled=False)
    overrides.bound_fetch_wait(app, 100, eager=False)
    thread = app.consumer._thread
    consumer = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1")  # never started: no I/O
    paused, fetching = TopicPartition("turns.acme", 0), TopicPartition("turns.globex", 0)
    consumer.assign([paused, fetching])
    consumer.pause(paused)
    # What Faust's check reads of a started consumer: its fetcher's view of the assignment.
    consumer._fetcher = SimpleNamespace(_subscriptions=consumer._subscription)
    thread._consumer = consumer
    thread.time_started = time.monotonic() - 3600  # past every one of Faust's timeouts
    now = time.monotonic()

    with caplog.at_level(logging.ERROR):
        thread.verify_event_path(now, TP(paused.topic, paused.partition))
    assert not caplog.records

    with caplog.at_level(logging.ERROR):
        thread.verify_event_path(now, TP(fetching.topic, fetching.partition))
    assert any("turns.globex" in r.getMessage() for r in caplog.records), "the check still runs"
    consumer._fetcher = None
    await consumer.stop()
