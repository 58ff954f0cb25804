"""The segmenter behind per-tenant shares: a tenant's turns over its share wait in the
overflow, so one tenant's backlog does not hold up another's L1s.

A batch of the turns topic is split by `domain.fair_share.split` before it is decoded
(`opening`, which the Faust edge calls first): a record's user and type are read from its
JSON without validating or decoding it. The records kept are opened and decoded as before
and go to the segmenter; the ones diverted are put on the user's overflow ledger (the
store), and their places in the turns log (not the records: the log keeps them) are sent to
the overflow topic, one record a tenant and partition of the turns log
(`contracts.turns_places`). They reach the handler as `Diverted` stand-ins: it sends their
places once the records kept are committed, so the overflow never handles a user's record
before the ones the main path kept. Ledger first: a crash between the two replays the
batch, which finds the user held and diverts the same records again (a place named twice is
a record read twice, which the event-id dedup drops). The batch's progress marks still
cover the diverted records: a read holding a receipt for one waits on the ledger instead
(`recall.writes`).

A batch of the overflow is records of the turns topic, read back at their places
(`edges.faust.overflow`), so tombstones and freshness reckon with them as on the main path.
It marks no progress, and once it is committed its records are struck off the ledger; a
user whose ledger is empty goes back to the main path.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memstream.contracts.codec import TURN_TYPE
from memstream.contracts.records import Consumed, Forwarded, RawEvent
from memstream.contracts.sealed_turns import SEALED_TURN_TYPE
from memstream.contracts.turns_places import encode_places, places_of
from memstream.domain.fair_share import (
    Kind,
    Pending,
    Share,
    is_behind,
    served_first,
    split,
    tenant_key,
)
from memstream.domain.models import InputEvent
from memstream.domain.token_bucket import Bucket
from memstream.ports import Forwarder, OverflowLedger, OverflowQueues
from memstream.segmenter.handler import BatchReport, Segmenter, next_offsets

# A batch's opening after the split: per record, the record to decode, a rejection, or None
# (`edges.faust.app.Opening`); the split adds a `Consumed` already decided (diverted).
Opening = Callable[[Sequence[RawEvent]], Awaitable[list[Any]]]
_KINDS = {TURN_TYPE: Kind.TURN, SEALED_TURN_TYPE: Kind.TURN, "forget.v1": Kind.FORGET}


@dataclass(frozen=True, slots=True)
class Diverted:
    """The stand-in of a record the split sent to the overflow: the handler skips it, and
    its place still counts for the batch's progress marks."""

    user_id: str
    kind: Kind


class FairShare:
    def __init__(
        self,
        segmenter: Segmenter,
        *,
        ledger: OverflowLedger,
        queues: OverflowQueues,
        forwarder: Forwarder,
        overflow_topic: str,
        overflow_partitions: int,
        share: Share,
        behind_s: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._segmenter = segmenter
        self._ledger = ledger
        self._queues = queues
        self._forwarder = forwarder
        self._overflow_topic = overflow_topic
        self._overflow_partitions = overflow_partitions
        # Each tenant's overflow partition, once known: chosen once and never changed.
        self._queue_of: dict[str, int] = {}
        self._share = share
        # A lag past which tenants over their share get none of it (`domain.fair_share`).
        self._behind_s = behind_s
        self._clock = clock
        # Per process: each worker shares out its own partitions' segmenter.
        self._buckets: dict[str, Bucket] = {}

    @property
    def handled(self) -> int:
        """Records the segmenter handled, from the turns topic and from the overflow."""
        return self._segmenter.handled

    def opening(self, then: Opening | None) -> Opening:
        """The turns topic's opening: the split, then `then` (the sealed turns' opener) for
        the records kept. Forgets and records that do not name their user are always kept
        (the decoder dead-letters a bad one)."""

        async def split_then_open(raws: Sequence[RawEvent]) -> list[Any]:
            peeked = [_peek(raw) for raw in raws]
            pending = [
                p or Pending("", Kind.FORGET, r.timestamp)
                for p, r in zip(peeked, raws, strict=True)
            ]
            held = await self._ledger.held({p.user_id for p in peeked if p is not None})
            now = self._clock()
            behind = self._behind_s is not None and is_behind(pending, now, self._behind_s)
            plan = split(pending, held, self._buckets, self._share, now, behind)
            moved = [(raws[i], pending[i]) for i in plan.diverted]
            if moved:  # held from now on; forwarded by the handler (`handle_batch`)
                await self._ledger.divert(_raw_places(moved))
            self._buckets = dict(plan.buckets)  # once on the ledger: a retry finds them held
            kept = [raws[i] for i in plan.kept]
            opened = list(kept) if then is None else await then(kept)
            out: list[Any] = [None] * len(raws)
            for i, item in zip(plan.kept, opened, strict=True):
                out[i] = item
            for i in plan.diverted:
                out[i] = Consumed(Diverted(pending[i].user_id, pending[i].kind), raws[i])
            return out

        return split_then_open

    async def handle_batch(self, batch: Sequence[Consumed[InputEvent]]) -> BatchReport:
        """A batch of the turns topic, split by `opening`: the records kept are handled
        (those of tenants within their share first, `served_first`), the progress marks
        pass the diverted ones too, then the diverted ones are forwarded. Only then: a
        user's first records of the batch may be kept and the rest diverted, and the
        overflow must not write the rest before the first."""
        kept = [c for c in batch if not isinstance(c.event, Diverted)]
        over = {tenant_key(c.event.user_id) for c in batch if isinstance(c.event, Diverted)}
        order = served_first([tenant_key(c.event.user_id) for c in kept], over)
        report = await self._segmenter.handle_batch(
            [kept[i] for i in order], progress=next_offsets(batch)
        )
        moved: dict[tuple[str, int], list[tuple[str, int]]] = {}
        counts: dict[str, int] = {}
        for item in batch:
            if isinstance(item.event, Diverted):
                tenant = tenant_key(item.event.user_id)
                place = (item.event.user_id, item.raw.offset)
                moved.setdefault((tenant, item.raw.partition), []).append(place)
                if item.event.kind is Kind.TURN:
                    counts[tenant] = counts.get(tenant, 0) + 1
        if moved:
            await self._learn_queues({tenant for tenant, _ in moved})
            await self._forwarder.forward(
                [self._places_record(t, p, records) for (t, p), records in moved.items()]
            )
        report.diverted = counts
        return report

    async def handle_overflow(self, batch: Sequence[Consumed[InputEvent]]) -> BatchReport:
        """A batch of the overflow topic: handled, then struck off the ledger."""
        report = await self._segmenter.handle_batch(batch, progress={})
        await self._ledger.release(_places(batch))
        stamps = [c.raw.timestamp for c in batch if c.raw.timestamp is not None]
        if stamps:
            report.overflow_lag = max(0.0, self._clock() - max(stamps))
        return report

    @property
    def overflow(self) -> OverflowSide:
        """This share's overflow side, with the same call as the segmenter's."""
        return OverflowSide(self)

    async def dead_lettered(self, raw: RawEvent) -> None:
        """An overflow record that went to the dead-letter topic instead: struck off too,
        or its user would wait for it for ever. It names its user (a turn, or a sealed one);
        one that names none was never diverted."""
        try:
            user_id = json.loads(raw.value).get("user_id")
        except (ValueError, AttributeError, RecursionError):
            return
        if isinstance(user_id, str):
            await self.struck_off({user_id: [(raw.partition, raw.offset)]})

    async def struck_off(self, places: Mapping[str, Sequence[tuple[int, int]]]) -> None:
        """Overflow records struck off by their places in the turns log, whatever became of
        them: those no handler saw included (a forgotten user's sealed turns, which the
        opening drops; records the turns log no longer holds). Striking off twice is a
        no-op."""
        if places:
            await self._ledger.release(places)

    async def _learn_queues(self, tenants: set[str]) -> None:
        unknown = tenants - self._queue_of.keys()
        if unknown:
            found = await self._queues.overflow_queues(unknown, self._overflow_partitions)
            self._queue_of.update(found)

    def _places_record(
        self, tenant: str, partition: int, records: Sequence[tuple[str, int]]
    ) -> Forwarded:
        """The places of a tenant's records diverted from one partition of the turns log,
        to the tenant's overflow partition (`ports.OverflowQueues`): each tenant's overflow
        is one queue of its own while there are partitions to spare, which the overflow's
        consumer takes in turn with the others'; a user's records stay in order, as part of
        their tenant's."""
        value = encode_places(places_of(partition, records))
        queue = self._queue_of[tenant]
        return Forwarded(self._overflow_topic, tenant, value, partition=queue)


class OverflowSide:
    """`FairShare.handle_overflow` as `handle_batch`, for the wrappers of a handler."""

    def __init__(self, share: FairShare) -> None:
        self._share = share

    @property
    def handled(self) -> int:
        return self._share.handled

    async def handle_batch(self, batch: Sequence[Consumed[InputEvent]]) -> BatchReport:
        return await self._share.handle_overflow(batch)


def _peek(raw: RawEvent) -> Pending | None:
    """The user and kind of a record, read from its JSON without validating it; None for a
    record that names no user (kept: the decoder says what is wrong with it)."""
    try:
        value = json.loads(raw.value)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    user_id, kind = value.get("user_id"), value.get("type")
    if not isinstance(user_id, str) or not user_id or not isinstance(kind, str):
        return None
    return Pending(user_id, _KINDS.get(kind, Kind.FOLLOWER), raw.timestamp)


def _places(batch: Sequence[Consumed[InputEvent]]) -> Mapping[str, list[tuple[int, int]]]:
    places: dict[str, list[tuple[int, int]]] = {}
    for item in batch:
        places.setdefault(item.event.user_id, []).append((item.raw.partition, item.raw.offset))
    return places


def _raw_places(moved: Sequence[tuple[RawEvent, Pending]]) -> dict[str, list[tuple[int, int]]]:
    places: dict[str, list[tuple[int, int]]] = {}
    for raw, pending in moved:
        places.setdefault(pending.user_id, []).append((raw.partition, raw.offset))
    return places
