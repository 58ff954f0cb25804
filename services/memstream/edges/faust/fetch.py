"""A Faust transport whose consumers long-poll the broker for a bounded, configurable time.

Faust builds its aiokafka consumer with `fetch_max_wait_ms=1500` and no way to change it.
A broker may hold an empty fetch for the whole wait even when records arrive meanwhile
(Tansu does), so a record produced just after a fetch went out waited up to 1.5 s before
the segmenter saw it: that is L1 latency for a live conversation, and the first second of
every replay. The wait is the only thing this transport changes.
"""

from __future__ import annotations

from typing import Any

import aiokafka
import faust
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread, Consumer, Transport


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
