"""What an agent does when its handler fails: retry outages, isolate and dead-letter poison."""

from __future__ import annotations

import redis.exceptions

from memstream.contracts.records import Consumed, RawEvent
from memstream.edges.faust.app import deliver

NO_WAIT = (0.0, 0.0)


def records(*values: bytes) -> list[Consumed[bytes]]:
    """Decoded records whose events are their bytes (what they decode to does not matter)."""
    return [Consumed(v, RawEvent(v, "turns", 0, i)) for i, v in enumerate(values)]


async def test_an_outage_is_retried_until_it_ends() -> None:
    calls: list[int] = []

    async def handler(batch: list[Consumed[bytes]]) -> None:
        calls.append(len(batch))
        if len(calls) < 6:  # more outages than the failure budget: outages do not count
            raise redis.exceptions.ConnectionError("redis restarting")

    letters: list[tuple[RawEvent, str]] = []

    async def dead_letter(raw: RawEvent, reason: str) -> None:
        letters.append((raw, reason))

    await deliver(handler, records(b"a", b"b"), dead_letter, backoff_s=NO_WAIT)
    assert calls == [2] * 6
    assert letters == []


async def test_a_cluster_mending_after_a_lost_primary_is_waited_out_not_dead_lettered() -> None:
    # Until a replica takes the lost primary's slots over, the cluster answers CLUSTERDOWN
    # or TRYAGAIN, a slot may be missing from the client's map, and the cluster client gives
    # up with ClusterError: none of that is the records' fault.
    mending = [
        redis.exceptions.ClusterDownError("CLUSTERDOWN The cluster is down"),
        redis.exceptions.TryAgainError("TRYAGAIN"),
        redis.exceptions.SlotNotCoveredError('Slot "12039" is not covered by the cluster.'),
        redis.exceptions.ClusterError("TTL exhausted."),
    ]
    calls: list[int] = []

    async def handler(batch: list[Consumed[bytes]]) -> None:
        calls.append(len(batch))
        if mending:
            raise mending.pop(0)

    letters: list[tuple[RawEvent, str]] = []

    async def dead_letter(raw: RawEvent, reason: str) -> None:
        letters.append((raw, reason))

    await deliver(handler, records(b"a", b"b"), dead_letter, backoff_s=NO_WAIT)
    assert calls == [2] * 5  # never split: the whole batch waits, then goes through
    assert letters == []


async def test_a_poison_record_is_dead_lettered_and_the_rest_handled() -> None:
    handled: list[bytes] = []

    async def handler(batch: list[Consumed[bytes]]) -> None:
        if any(c.event == b"poison" for c in batch):
            raise ValueError("cannot handle this")
        handled.extend(c.event for c in batch)

    letters: list[tuple[RawEvent, str]] = []

    async def dead_letter(raw: RawEvent, reason: str) -> None:
        letters.append((raw, reason))

    batch = records(b"a", b"poison", b"c")
    await deliver(handler, batch, dead_letter, backoff_s=NO_WAIT)
    assert handled == [b"a", b"c"]
    assert [(raw.value, raw.offset) for raw, _ in letters] == [(b"poison", 1)]
    assert "ValueError: cannot handle this" in letters[0][1]


async def test_a_poison_record_costs_its_batch_a_few_passes_not_one_per_record() -> None:
    calls: list[int] = []

    async def handler(batch: list[Consumed[bytes]]) -> None:
        calls.append(len(batch))
        if any(c.event == b"poison" for c in batch):
            raise ValueError("cannot handle this")

    letters: list[RawEvent] = []

    async def dead_letter(raw: RawEvent, reason: str) -> None:
        letters.append(raw)

    values = [b"ok%d" % i for i in range(1024)]
    values[700] = b"poison"
    await deliver(handler, records(*values), dead_letter, backoff_s=NO_WAIT)
    assert [raw.value for raw in letters] == [b"poison"]
    # Halving: each level handles about the batch once more; record by record would be 1024
    # calls, and three full-batch attempts before it.
    assert len(calls) <= 2 * 11 + 3
    assert sum(calls) <= 3 * 1024


async def test_a_failing_record_is_retried_for_at_most_its_budget() -> None:
    import time

    async def handler(batch: list[Consumed[bytes]]) -> None:
        raise ValueError("always")

    letters: list[RawEvent] = []

    async def dead_letter(raw: RawEvent, reason: str) -> None:
        letters.append(raw)

    started = time.monotonic()
    await deliver(
        handler,
        records(b"x"),
        dead_letter,
        attempts=1000,
        backoff_s=(0.05, 0.05),
        retry_budget_s=0.3,
    )
    assert time.monotonic() - started < 0.6
    assert len(letters) == 1
