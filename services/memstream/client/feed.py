"""`MemoryFeed`: the change feed of memstream's memories, as typed events, for one consumer
group (`docs/change-feed.md`).

    async with MemoryFeed("broker:9092", group_id="search-index") as feed:
        async for event in feed:
            match event:
                case MemoryWritten():  index.put(event.id, event.version, event.text)
                case MemoryRemoved():  index.delete(event.ids)
                case UserForgotten():  index.delete_user(event.user_id)

Delivery is at least once. An event counts as handled once the loop asks for the next one
(or leaves the block without an exception); handled events are committed for the group
when the loop asks for more records, on `commit()` and on leaving the block. So an event
whose handling raised is read again by the next run, and a consumer that stops mid-batch
sees the rest of that batch again: deduplicate by `event.dedup_key` or apply events
idempotently (every event here can be). Events of one user come in order (the topic is
keyed by user id); users on different partitions interleave.

Records that carry a user's words come sealed under the user's data key (docs/forget-
everywhere.md): give the feed an `opener` (an `AsyncRecallClient`), which asks the recall
API to open each poll's sealed records. A record whose user was forgotten meanwhile cannot
be opened any more and is skipped: that user's `UserForgotten` is on the feed.

Where a new group starts: `start="beginning"` (the oldest event kept) or `"end"` (only new
ones); `positions={partition: offset}` starts there instead. A group that fell behind the
topic's retention gets `FeedBehindRetention` naming what was lost and where to resume.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Mapping
from types import TracebackType
from typing import Any, Literal

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import NoOffsetForPartitionError, OffsetOutOfRangeError
from pydantic import TypeAdapter, ValidationError

from memstream.client.feed_events import FeedEvent
from memstream.client.opening import SEALED_TYPE, OpenedRecord, RecordOpener, SealedFeedError
from memstream.contracts.catalog import Catalog, load_catalog

__all__ = ["FeedBehindRetention", "MemoryFeed"]

log = logging.getLogger(__name__)
_EVENT: TypeAdapter[FeedEvent] = TypeAdapter(FeedEvent)
_BATCH_RECORDS = 500


class FeedBehindRetention(Exception):
    """The group's position is older than anything the topic keeps: events were lost.

    `lost` maps a partition to the offset the group wanted and the oldest one kept;
    `resume_from` is where to go on (`MemoryFeed(..., positions=error.resume_from)`), once
    the consumer has rebuilt what it derives from the feed (for instance from the recall
    API's memory listing), since the events in between will never come.
    """

    def __init__(self, topic: str, lost: Mapping[int, tuple[int, int]]) -> None:
        self.topic = topic
        self.lost = dict(lost)
        self.resume_from = {partition: kept for partition, (_, kept) in lost.items()}
        gaps = ", ".join(
            f"partition {p}: wanted offset {wanted}, oldest kept {kept}"
            for p, (wanted, kept) in sorted(lost.items())
        )
        super().__init__(
            f"the feed {topic} no longer holds events this consumer has not read ({gaps}); "
            f"resume from positions={self.resume_from} after rebuilding your copy of the "
            "memories (the events in between are gone)"
        )


class _SeekToPositions(ConsumerRebalanceListener):
    """Moves each partition to the caller's position the first time it is assigned, once
    the position is known to be one the topic holds (a broker may answer a fetch past the
    end with nothing rather than an error)."""

    def __init__(self, feed: MemoryFeed, positions: Mapping[int, int]) -> None:
        self._feed = feed
        self._positions = dict(positions)

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self._feed.commit()
        self._feed.let_go(revoked)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        wanted = {
            tp: self._positions.pop(tp.partition)
            for tp in assigned
            if tp.partition in self._positions
        }
        if not wanted:
            return
        refused = await self._feed.out_of_range(wanted)
        if refused is not None:
            self._feed.refused = refused  # raised by the loop: a listener's error is only logged
            return
        for tp, offset in wanted.items():
            self._feed.consumer.seek(tp, offset)


class MemoryFeed:
    """An async iterator over the memories topic's events for one consumer group."""

    def __init__(
        self,
        bootstrap: str,
        *,
        group_id: str,
        topic_prefix: str = "",
        catalog: Catalog | None = None,
        start: Literal["beginning", "end"] = "beginning",
        positions: Mapping[int, int] | None = None,
        client_id: str = "memstream-feed",
        opener: RecordOpener | None = None,
        **kafka_options: Any,
    ) -> None:
        self.topic = (catalog or load_catalog(topic_prefix)).memories.name
        self._start = start
        self._opener = opener
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group_id,
            client_id=client_id,
            enable_auto_commit=False,
            # Never move silently: a position out of range is reported (`FeedBehindRetention`),
            # a group without one starts where `start` says.
            auto_offset_reset="none",
            **kafka_options,
        )
        self._listener = _SeekToPositions(self, positions or {})
        self._pending: list[FeedEvent] = []
        self._given: FeedEvent | None = None  # the last event returned, maybe still in hand
        self._handled: dict[TopicPartition, int] = {}  # next offset after what is handled
        self._committed: dict[TopicPartition, int] = {}
        self.refused: Exception | None = None  # a starting position the topic does not hold

    async def start(self) -> None:
        await self.consumer.start()
        self.consumer.subscribe([self.topic], listener=self._listener)

    async def stop(self, *, handled: bool = True) -> None:
        """Commit and leave the group; `handled`: whether the last event returned was."""
        try:
            if handled:
                self._mark_handled()
            await self.commit()
        finally:
            await self.consumer.stop()

    async def __aenter__(self) -> MemoryFeed:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop(handled=exc is None)

    def __aiter__(self) -> MemoryFeed:
        return self

    async def __anext__(self) -> FeedEvent:
        self._mark_handled()  # the loop came back for more: what it was given is handled
        while not self._pending:
            await self.commit()
            self._pending = await self._fetch()
            if self.refused is not None:
                raise self.refused
        self._given = self._pending.pop(0)
        return self._given

    def positions(self) -> dict[int, int]:
        """Per partition, the offset after the last event handled: where to resume."""
        return {tp.partition: offset for tp, offset in self._handled.items()}

    async def commit(self) -> None:
        """Record for the group how far the events are handled."""
        owned = self.consumer.assignment()  # a partition given away is its new reader's
        fresh = {
            tp: o for tp, o in self._handled.items() if tp in owned and self._committed.get(tp) != o
        }
        if fresh:
            await self.consumer.commit(fresh)
            self._committed.update(fresh)

    async def _fetch(self) -> list[FeedEvent]:
        try:
            batches = await self.consumer.getmany(timeout_ms=1000, max_records=_BATCH_RECORDS)
        except NoOffsetForPartitionError as unplaced:
            await self._place_new(unplaced)
            return []
        except OffsetOutOfRangeError as gone:
            wanted = dict(gone.args[0]) if gone.args else {}
            raise (await self.out_of_range(wanted) or gone) from gone
        read = [(tp, r) for tp, records in batches.items() for r in records]
        values = await self._opened([_parsed(r.value) for _, r in read])
        events: list[FeedEvent] = []
        for (tp, record), value in zip(read, values, strict=True):
            event = _decoded(value, tp.partition, record.offset)
            if event is not None:
                events.append(event)
            else:  # skipped, but read: the group moves past it
                self._handled[tp] = record.offset + 1
        return events

    async def _opened(self, values: list[Any]) -> list[Any]:
        """`values` with each sealed one opened by the opener; None for one that cannot be
        (its user forgotten, or damaged: logged), which the loop then skips."""
        sealed = [
            i for i, v in enumerate(values) if isinstance(v, dict) and v.get("type") == SEALED_TYPE
        ]
        if not sealed:
            return values
        if self._opener is None:
            raise SealedFeedError(self.topic)
        out = list(values)
        for start in range(0, len(sealed), _BATCH_RECORDS):
            chunk = sealed[start : start + _BATCH_RECORDS]
            answers = await self._opener.open_records([values[i] for i in chunk])
            for i, answer in zip(chunk, answers, strict=True):
                out[i] = _opened_value(answer)
        return out

    def let_go(self, revoked: Collection[TopicPartition]) -> None:
        """Forget partitions another member now reads: their records still waiting here are
        that member's to give (from the group's committed offsets)."""
        self._pending = [e for e in self._pending if self._tp(e) not in revoked]
        for tp in revoked:
            self._handled.pop(tp, None)
            self._committed.pop(tp, None)

    def _tp(self, event: FeedEvent) -> TopicPartition:
        return TopicPartition(self.topic, event.partition)

    def _mark_handled(self) -> None:
        if self._given is not None:
            self._handled[self._tp(self._given)] = self._given.offset + 1
            self._given = None

    async def _place_new(self, unplaced: NoOffsetForPartitionError) -> None:
        """A partition the group has no position in starts where `start` says."""
        tps = [tp for tp in unplaced.args if isinstance(tp, TopicPartition)]
        tps = tps or list(self.consumer.assignment())
        if self._start == "beginning":
            await self.consumer.seek_to_beginning(*tps)
        else:
            await self.consumer.seek_to_end(*tps)

    async def out_of_range(self, wanted: Mapping[TopicPartition, int]) -> Exception | None:
        """Why these positions cannot be read from (behind retention, past the end), or None."""
        kept = await self.consumer.beginning_offsets(list(wanted))
        ends = await self.consumer.end_offsets(list(wanted))
        behind = {tp.partition: (o, kept[tp]) for tp, o in wanted.items() if o < kept[tp]}
        if behind:
            return FeedBehindRetention(self.topic, behind)
        if any(o > ends[tp] for tp, o in wanted.items()):
            return ValueError(
                f"positions {_by_partition(wanted)} are past the end of {self.topic} "
                f"(it ends at {_by_partition(ends)}): not a place this feed has been"
            )
        return None


def _by_partition(offsets: Mapping[TopicPartition, int]) -> dict[int, int]:
    return {tp.partition: o for tp, o in offsets.items()}


def _parsed(value: bytes | None) -> Any:
    """A record's JSON, or None when it has none (logged when it is not JSON)."""
    if value is None:
        return None
    try:
        return json.loads(value)
    except ValueError as exc:
        log.warning("feed record skipped: not JSON (%s)", exc)
        return None


def _opened_value(answer: OpenedRecord) -> dict[str, Any] | None:
    if answer.status in ("opened", "plain"):
        return answer.value
    if answer.status == "invalid":
        log.warning("feed record skipped: it does not open (%s)", answer.reason)
    return None  # forgotten: nothing of it can be read, and the user's forget is on the feed


def _decoded(value: Any, partition: int, offset: int) -> FeedEvent | None:
    """The record as a typed event, or None for one of a type this SDK does not know (a
    newer server's: the contract only adds types) or not an event at all (logged)."""
    if value is None:
        return None
    try:
        return _EVENT.validate_python(value, context=None).model_copy(
            update={"partition": partition, "offset": offset}
        )
    except ValidationError as exc:
        log.warning("feed record %d@%d skipped: %s", offset, partition, exc.errors()[0]["msg"])
        return None
