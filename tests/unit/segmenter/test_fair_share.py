"""The segmenter behind tenant shares: the split runs on the records' bytes before they are
decoded, diverted records are on the ledger before their places are sent to the overflow,
progress marks still pass them, and the overflow, reading them back from the turns log,
writes them once and strikes them off."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import pytest
from tests.unit.segmenter.test_handler import exchange, rig

from memstream.contracts.codec import decode_input, encode_forget, encode_turn
from memstream.contracts.records import Consumed, Forwarded, RawEvent
from memstream.contracts.turns_places import decode_places
from memstream.domain.fair_share import Kind, Share, queue_for
from memstream.domain.ids import segment_id
from memstream.domain.models import ForgetRequested, InputEvent, Turn
from memstream.segmenter.fair_share import Diverted, FairShare

FLOOD, QUIET = "acme:ann", "globex:bo"


@dataclass
class Ledger:
    places: dict[str, set[tuple[int, int]]] = field(default_factory=dict)

    async def held(self, user_ids: Collection[str]) -> set[str]:
        return {u for u in user_ids if self.places.get(u)}

    async def divert(self, positions: Mapping[str, Sequence[tuple[int, int]]]) -> None:
        for user, places in positions.items():
            self.places.setdefault(user, set()).update(places)

    async def release(self, positions: Mapping[str, Sequence[tuple[int, int]]]) -> None:
        for user, places in positions.items():
            self.places.get(user, set()).difference_update(places)


@dataclass
class Queues:
    taken: dict[str, int] = field(default_factory=dict)

    async def overflow_queues(self, tenants: Collection[str], partitions: int) -> dict[str, int]:
        for tenant in sorted(set(tenants) - self.taken.keys()):
            self.taken[tenant] = queue_for(self.taken, partitions)
        return {t: self.taken[t] for t in tenants}


@dataclass
class Forwarder:
    sent: list[Forwarded] = field(default_factory=list)
    failures: int = 0

    async def forward(self, records: Sequence[Forwarded]) -> None:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("broker away")
        self.sent.extend(records)


def records(events: Sequence[InputEvent], partition: int = 0) -> list[RawEvent]:
    """The events as records of the turns topic, consecutive offsets and broker times."""
    return [RawEvent(_encoded(e), "turns", partition, i, 100.0 + i) for i, e in enumerate(events)]


def _encoded(event: InputEvent) -> bytes:
    if isinstance(event, Turn):
        return json.dumps(encode_turn(event)).encode()
    assert isinstance(event, ForgetRequested)
    return json.dumps(encode_forget(event.user_id, event.message_ids)).encode()


async def through(share: FairShare, raws: Sequence[RawEvent]):  # type: ignore[no-untyped-def]
    """A batch as the Faust edge hands it over: split (and opened), the rest decoded."""
    opened = await share.opening(None)(raws)
    batch = [
        item if isinstance(item, Consumed) else Consumed(decode_input(json.loads(item.value)), item)
        for item in opened
    ]
    return await share.handle_batch(batch)


def sent_places(sent: Sequence[Forwarded]) -> list[tuple[int, int]]:
    """The turns-log places (partition, offset) the overflow's records name, in order."""
    places = []
    for record in sent:
        named = decode_places(record.value)
        assert named is not None
        places += [(named.partition, offset) for offset, _ in named.in_log_order()]
    return places


def overflow_batch(sent: Sequence[Forwarded], log: Sequence[RawEvent]) -> list[Consumed]:
    """What the overflow's consumer hands over: the records its places name, read back
    from the turns log (`log`)."""
    at = {(raw.partition, raw.offset): raw for raw in log}
    raws = [at[place] for place in sent_places(sent)]
    return [Consumed(decode_input(json.loads(raw.value)), raw) for raw in raws]


def fair_share(ledger: Ledger, forwarder: Forwarder, burst: float = 2.0):  # type: ignore[no-untyped-def]
    r = rig()
    share = FairShare(
        r.segmenter,
        ledger=ledger,
        queues=Queues(),
        forwarder=forwarder,
        overflow_topic="overflow",
        overflow_partitions=6,
        share=Share(rate=0.001, burst=burst),
        clock=lambda: 1000.0,
    )
    return r, share


async def test_the_quiet_tenant_is_written_at_once_the_flood_waits_in_the_overflow() -> None:
    ledger, forwarder = Ledger(), Forwarder()
    r, share = fair_share(ledger, forwarder)
    flood = exchange(0, FLOOD) + exchange(1, FLOOD) + exchange(2, FLOOD)
    quiet = exchange(0, QUIET)
    events = flood[:3] + quiet + flood[3:]
    log = records(events)
    report = await through(share, log)
    # Over its burst beside a tenant within its share, the flood keeps none of the batch.
    assert [n.user_id for n in report.segments] == [QUIET]
    assert report.diverted == {"acme": 6}
    # One record of places for the tenant's six, in the log's order; none of their words.
    assert len(forwarder.sent) == 1
    assert sent_places(forwarder.sent) == [(0, 0), (0, 1), (0, 2), (0, 5), (0, 6), (0, 7)]
    assert not [
        e for e in flood if isinstance(e, Turn) and e.text in forwarder.sent[0].value.decode()
    ]
    assert {f.key for f in forwarder.sent} == {"acme"}  # keyed by tenant: one queue each
    assert ledger.places[FLOOD] == {(0, 0), (0, 1), (0, 2), (0, 5), (0, 6), (0, 7)}
    assert r.tree.next_offsets == {0: 8}  # the mark passes the diverted records too

    later_log = records(exchange(3, FLOOD), partition=1)
    later = await through(share, later_log)
    assert later.segments == [] and len(sent_places(forwarder.sent)) == 8  # held: follows

    drained = await share.handle_overflow(overflow_batch(forwarder.sent, log + later_log))
    ids = [segment_id(FLOOD, [f"q{n}", f"a{n}"]) for n in (0, 1, 2, 3)]
    assert [n.id for n in drained.segments] == ids
    assert ledger.places[FLOOD] == set()
    assert r.tree.next_offsets == {0: 8, 1: 2}  # the overflow marks nothing
    assert drained.overflow_lag == pytest.approx(1000.0 - 107.0)  # newest broker time


async def test_each_tenant_over_its_share_has_an_overflow_partition_of_its_own() -> None:
    ledger, forwarder = Ledger(), Forwarder()
    _, share = fair_share(ledger, forwarder, burst=1.0)
    other = "initech:cy"
    events = exchange(0, FLOOD) + exchange(0, other) + exchange(1, FLOOD) + exchange(1, other)
    await through(share, records(events))
    await through(share, records(exchange(2, other) + exchange(2, FLOOD), partition=1))
    queues: dict[str, set[int | None]] = {}
    for sent in forwarder.sent:
        queues.setdefault(sent.key, set()).add(sent.partition)
    # One partition each, kept from batch to batch, and not the same one.
    assert queues == {"acme": {0}, "initech": {1}}


async def test_a_batch_replayed_after_the_forward_failed_diverts_the_same_records() -> None:
    """The forward comes after the records kept are committed (the overflow must not write
    a user's later record first); one that fails is replayed with the batch."""
    ledger, forwarder = Ledger(), Forwarder(failures=1)
    _, share = fair_share(ledger, forwarder, burst=1.0)
    batch = records(exchange(0, FLOOD))
    with pytest.raises(ConnectionError):
        await through(share, batch)
    # On the ledger before it was sent: a read the progress mark lets through waits on it.
    assert ledger.places[FLOOD] == {(0, 1)}
    await through(share, batch)  # held now: both records follow the first diversion
    assert sent_places(forwarder.sent) == [(0, 0), (0, 1)]
    drained = await share.handle_overflow(overflow_batch(forwarder.sent, batch))
    assert [n.id for n in drained.segments] == [segment_id(FLOOD, ["q0", "a0"])]
    assert ledger.places[FLOOD] == set()


async def test_places_are_struck_off_whatever_became_of_their_records() -> None:
    ledger, forwarder = Ledger(), Forwarder()
    _, share = fair_share(ledger, forwarder)
    await ledger.divert({FLOOD: [(0, 7), (0, 8)], QUIET: [(1, 2)]})
    await share.struck_off({FLOOD: [(0, 7)], QUIET: [(1, 2)]})
    assert ledger.places == {FLOOD: {(0, 8)}, QUIET: set()}


async def test_a_dead_lettered_overflow_record_is_struck_off() -> None:
    ledger, forwarder = Ledger(), Forwarder()
    _, share = fair_share(ledger, forwarder)
    await ledger.divert({FLOOD: [(0, 7)]})
    value = b'{"type": "turn.v1", "user_id": "acme:ann"}'
    await share.dead_lettered(RawEvent(value, "overflow", 0, 7))
    await share.dead_lettered(RawEvent(b"not json", "overflow", 0, 8))
    assert ledger.places[FLOOD] == set()


async def test_forgets_and_records_naming_no_user_are_never_diverted() -> None:
    ledger, forwarder = Ledger(), Forwarder()
    r, share = fair_share(ledger, forwarder, burst=1.0)
    events = [*exchange(0, FLOOD), ForgetRequested(FLOOD, ()), *exchange(1, FLOOD)]
    raws = [*records(events), RawEvent(b"not json", "turns", 0, 5, 105.0)]
    opened = await share.opening(None)(raws)
    # The burst of one turn is kept; every later record of the user follows the first
    # diverted one, except the forget; the bad record is left to the decoder.
    assert [isinstance(o, Consumed) for o in opened] == [False, True, False, True, True, False]
    assert [o.event for o in opened if isinstance(o, Consumed)] == [
        Diverted(FLOOD, Kind.TURN),
        Diverted(FLOOD, Kind.TURN),
        Diverted(FLOOD, Kind.TURN),
    ]
    assert forwarder.sent == [] and ledger.places[FLOOD] == {(0, 1), (0, 3), (0, 4)}
    report = await share.handle_batch(
        [
            o if isinstance(o, Consumed) else Consumed(decode_input(json.loads(o.value)), o)
            for o in opened[:5]
        ]
    )
    assert report.diverted == {"acme": 3}
    assert sent_places(forwarder.sent) == [(0, 1), (0, 3), (0, 4)]  # after the kept are written
    assert r.tree.next_offsets == {0: 5}
