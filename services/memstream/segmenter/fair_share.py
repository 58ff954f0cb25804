"""The segmenter behind per-tenant shares: a tenant's turns over its share wait in the
overflow topic, so one tenant's backlog does not hold up another's L1s.

A batch of the turns topic is split by `domain.fair_share.split` before it is decoded
(`opening`, which the Faust edge calls first): a record's user and type are read from its
JSON without validating or decoding it, so a diverted record costs the main path a parse
and a produce. The records kept are opened and decoded as before and go to the segmenter;
the ones diverted are put on the user's overflow ledger (the store), then forwarded to the
overflow topic as they came (a turn in words sealed first, when the topics are sealed: a
forget then reaches the overflow's copy too), with their place in the turns log. They reach
the handler as `Diverted` stand-ins: it forwards them once the records kept are committed,
so the overflow never writes a user's record before the ones the main path kept. Ledger
first: a crash between the two replays the batch, which finds the user held and diverts the
same records again (a second copy in the overflow is dropped by the event-id dedup). The
batch's progress marks still cover the diverted records: a read holding a receipt for one
waits on the ledger instead (`recall.writes`).

A batch of the overflow topic carries each record's place in the turns log (the edge put it
back, `contracts.records.at_origin`), so tombstones and freshness reckon with it as with a
record of the turns topic. It marks no progress, and once it is committed its records are
struck off the ledger; a user whose ledger is empty goes back to the main path.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memstream.contracts.codec import TURN_TYPE
from memstream.contracts.records import Consumed, Forwarded, RawEvent
from memstream.contracts.sealed_turns import SEALED_TURN_TYPE, turn_public_key, turn_sealer
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
from memstream.ports import DataKeys, Forwarder, OverflowLedger, OverflowQueues
from memstream.segmenter.handler import BatchReport, Segmenter, next_offsets

# A batch's opening after the split: per record, the record to decode, a rejection, or None
# (`edges.faust.app.Opening`); the split adds a `Consumed` already decided (diverted).
Opening = Callable[[Sequence[RawEvent]], Awaitable[list[Any]]]
# A flood's diverted turns are sealed by the hundred a batch: between runs of this many, the
# loop serves whatever waits (a recall, a fetch).
SEALS_BETWEEN_YIELDS = 32
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
        data_keys: DataKeys | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._segmenter = segmenter
        # With the users' data keys, turns in words are sealed before they are forwarded.
        self._data_keys = data_keys
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
        moved: list[tuple[RawEvent, Pending]] = []
        counts: dict[str, int] = {}
        for item in batch:
            if isinstance(item.event, Diverted):
                moved.append((item.raw, Pending(item.event.user_id, item.event.kind)))
                if item.event.kind is Kind.TURN:
                    tenant = tenant_key(item.event.user_id)
                    counts[tenant] = counts.get(tenant, 0) + 1
        if moved:
            values = await self._sealed_values(moved)
            await self._learn_queues({tenant_key(p.user_id) for _, p in moved})
            forwarded = zip(moved, values, strict=True)
            await self._forwarder.forward(
                [self._forwarded(r, p.user_id, v) for (r, p), v in forwarded]
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
        or its user would wait for it for ever."""
        await self.struck_off([raw])

    async def struck_off(self, raws: Sequence[RawEvent]) -> None:
        """Overflow records struck off by their bytes (a turn, or a sealed one: both name
        their user), whatever became of them: those no handler saw included (a forgotten
        user's sealed turns, which the opening drops). Striking off twice is a no-op."""
        places: dict[str, list[tuple[int, int]]] = {}
        for raw in raws:
            try:
                user_id = json.loads(raw.value).get("user_id")
            except (ValueError, AttributeError):
                continue  # no user to hold: the main path never diverted it
            if isinstance(user_id, str):
                places.setdefault(user_id, []).append((raw.partition, raw.offset))
        if places:
            await self._ledger.release(places)

    async def _learn_queues(self, tenants: set[str]) -> None:
        unknown = tenants - self._queue_of.keys()
        if unknown:
            found = await self._queues.overflow_queues(unknown, self._overflow_partitions)
            self._queue_of.update(found)

    def _forwarded(self, raw: RawEvent, user_id: str, value: bytes) -> Forwarded:
        """To its tenant's partition (`ports.OverflowQueues`): each tenant's overflow is
        one queue of its own while there are partitions to spare, which the overflow's
        consumer takes in turn with the others'; a user's records stay in order, as part of
        their tenant's."""
        tenant = tenant_key(user_id)
        origin = (raw.partition, raw.offset, raw.timestamp)
        queue = self._queue_of[tenant]
        return Forwarded(self._overflow_topic, tenant, value, origin, partition=queue)

    async def _sealed_values(self, moved: Sequence[tuple[RawEvent, Pending]]) -> list[bytes]:
        """The bytes to forward: as they came, except a turn in words when the topics are
        sealed, which goes sealed for its user's turn key. A forgotten user has no key: its
        turn is sealed for a key nobody holds, and the opening drops it as forgotten."""
        values = [raw.value for raw, _ in moved]
        if self._data_keys is None:
            return values
        plain = {i: value for i, (raw, _) in enumerate(moved) if (value := _in_words(raw))}
        if not plain:
            return values
        keys = await self._data_keys.data_keys_for_writing({moved[i][1].user_id for i in plain})
        # One key derivation and one key agreement a user and batch, not one a record.
        sealers: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {}
        for n, (i, value) in enumerate(plain.items()):
            if n and n % SEALS_BETWEEN_YIELDS == 0:
                await asyncio.sleep(0)  # the recall API shares this loop: let it in
            user_id = moved[i][1].user_id
            if user_id not in sealers:
                data_key = keys.get(user_id) or os.urandom(32)
                sealers[user_id] = turn_sealer(turn_public_key(data_key))
            sealed = sealers[user_id](value)
            values[i] = json.dumps(sealed, separators=(",", ":")).encode()
        return values


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


def _in_words(raw: RawEvent) -> dict[str, Any] | None:
    """The record's value if it is a turn as its producer wrote it, words readable."""
    try:
        value = json.loads(raw.value)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) and value.get("type") == TURN_TYPE else None


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
