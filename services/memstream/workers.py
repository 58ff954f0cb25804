"""The Faust application: agents that decode records and hand them to the handlers.

Agents hold no logic. The segmenter agent takes records in batches (so embeddings are
computed in batches) and the consolidator agent one closure at a time; Faust commits a
record's offset only after the agent has moved past it, i.e. after the handler's durable
writes. Both consume topics keyed by user, so each user's events are handled in order even
with several workers in the group.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

import faust

from memstream.codec import decode_window
from memstream.consolidator.handler import Consolidator
from memstream.segmenter.handler import RawEvent, Segmenter

log = logging.getLogger(__name__)

ROLES = ("segmenter", "consolidator")


def build_faust_app(
    *,
    app_id: str,
    bootstrap: str,
    turns_topic: str,
    windows_topic: str,
    segmenter: Segmenter | None,
    consolidator: Consolidator | None,
    batch_size: int = 1024,
    batch_within_s: float = 0.25,
    **options: Any,
) -> faust.App:
    """A Faust app running the agents whose handler is given."""
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

    if segmenter is not None:
        turns = app.topic(turns_topic, key_type=bytes, value_type=bytes)

        @app.agent(turns, name=f"{app_id}-segmenter")
        async def segment(stream: faust.StreamT[bytes]) -> None:
            # take_events (not take) keeps each record's topic/partition/offset for the DLQ.
            batches = stream.take_events(batch_size, within=batch_within_s)  # type: ignore[attr-defined]
            async for events in batches:
                await segmenter.handle_batch(list(_raw(events)))

    if consolidator is not None:
        windows = app.topic(windows_topic, key_type=bytes, value_type=bytes)

        @app.agent(windows, name=f"{app_id}-consolidator")
        async def consolidate(stream: faust.StreamT[bytes]) -> None:
            async for values in stream.take(batch_size, within=batch_within_s):
                await consolidator.handle_batch([decode_window(json.loads(v)) for v in values])

    return app


def _raw(events: Iterable[faust.EventT]) -> Iterable[RawEvent]:
    for event in events:
        message = event.message
        value = message.value if isinstance(message.value, bytes) else bytes(message.value or b"")
        yield RawEvent(value, message.topic, message.partition, message.offset)
