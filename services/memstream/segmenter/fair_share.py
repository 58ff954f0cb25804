"""The segmenter behind per-tenant shares: a tenant's turns over its share wait in the
overflow topic, so one tenant's backlog does not hold up another's L1s.

A batch of the turns topic is split by `domain.fair_share.split`: the records kept go to
the segmenter; the ones diverted are put on the user's overflow ledger (the store), then
forwarded to the overflow topic as they came (a turn in words sealed first, when the topics
are sealed: a forget then reaches the overflow's copy too), with their place in the turns
log. Ledger
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

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memstream.contracts.records import Consumed, Forwarded, RawEvent
from memstream.contracts.sealed_turns import seal_turn, turn_public_key
from memstream.domain.fair_share import Kind, Pending, Share, split
from memstream.domain.models import ForgetRequested, InputEvent, Turn
from memstream.domain.token_bucket import Bucket
from memstream.ports import DataKeys, Forwarder, OverflowLedger
from memstream.segmenter.handler import BatchReport, Segmenter, next_offsets


class FairShare:
    def __init__(
        self,
        segmenter: Segmenter,
        *,
        ledger: OverflowLedger,
        forwarder: Forwarder,
        overflow_topic: str,
        share: Share,
        data_keys: DataKeys | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._segmenter = segmenter
        # With the users' data keys, turns in words are sealed before they are forwarded.
        self._data_keys = data_keys
        self._ledger = ledger
        self._forwarder = forwarder
        self._overflow_topic = overflow_topic
        self._share = share
        self._clock = clock
        # Per process: each worker shares out its own partitions' segmenter.
        self._buckets: dict[str, Bucket] = {}

    @property
    def handled(self) -> int:
        """Records the segmenter handled, from the turns topic and from the overflow."""
        return self._segmenter.handled

    async def handle_batch(self, batch: Sequence[Consumed[InputEvent]]) -> BatchReport:
        """A batch of the turns topic: the records within their tenants' shares now, the
        rest (and everything after them of the same users) to the overflow."""
        pending = [Pending(c.event.user_id, _kind(c.event), c.raw.timestamp) for c in batch]
        held = await self._ledger.held({p.user_id for p in pending})
        plan = split(pending, held, self._buckets, self._share, self._clock())
        self._buckets = dict(plan.buckets)
        if plan.diverted:
            moved = [batch[i] for i in plan.diverted]
            await self._ledger.divert(_places(moved))
            values = await self._sealed_values(moved)
            await self._forwarder.forward(
                [self._forwarded(c, v) for c, v in zip(moved, values, strict=True)]
            )
        kept = [batch[i] for i in plan.kept]
        report = await self._segmenter.handle_batch(kept, progress=next_offsets(batch))
        report.diverted = dict(plan.diverted_by_tenant)
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

    def _forwarded(self, item: Consumed[InputEvent], value: bytes) -> Forwarded:
        raw = item.raw
        origin = (raw.partition, raw.offset, raw.timestamp)
        return Forwarded(self._overflow_topic, item.event.user_id, value, origin)

    async def _sealed_values(self, moved: Sequence[Consumed[InputEvent]]) -> list[bytes]:
        """The bytes to forward: as they came, except a turn in words when the topics are
        sealed, which goes sealed for its user's turn key. A forgotten user has no key: its
        turn is sealed for a key nobody holds, and the opening drops it as forgotten."""
        values = [item.raw.value for item in moved]
        if self._data_keys is None:
            return values
        plain = {i: value for i, item in enumerate(moved) if (value := _in_words(item))}
        if not plain:
            return values
        keys = await self._data_keys.data_keys_for_writing({moved[i].event.user_id for i in plain})
        for i, value in plain.items():
            data_key = keys.get(moved[i].event.user_id) or os.urandom(32)
            sealed = seal_turn(value, turn_public_key(data_key))
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


def _in_words(item: Consumed[InputEvent]) -> dict[str, Any] | None:
    """The record's value if it is a turn as its producer wrote it, words readable."""
    if not isinstance(item.event, Turn):
        return None
    try:
        value = json.loads(item.raw.value)
    except ValueError:
        return None
    return value if isinstance(value, dict) and value.get("type") == "turn.v1" else None


def _kind(event: InputEvent) -> Kind:
    if isinstance(event, Turn):
        return Kind.TURN
    if isinstance(event, ForgetRequested):
        return Kind.FORGET
    # A session end, a rebuild and a tick follow their user: a clock tick that closed a
    # session ahead of turns still waiting in the overflow would split it.
    return Kind.FOLLOWER


def _places(batch: Sequence[Consumed[InputEvent]]) -> Mapping[str, list[tuple[int, int]]]:
    places: dict[str, list[tuple[int, int]]] = {}
    for item in batch:
        places.setdefault(item.event.user_id, []).append((item.raw.partition, item.raw.offset))
    return places
