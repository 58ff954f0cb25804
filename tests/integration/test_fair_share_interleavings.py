"""A user's records on both paths of a tenant share, interleaved as the two sides can run,
on the real Redis ledger: no record is lost and each user's L1s come in order.

The fairness benchmark once lost a quiet L1 with the share on (issue #38). These pin the
interleavings of the share's own code that were suspected and ruled out: a turn handled on
the overflow while the main path splits the user's next batch before the overflow strikes it
off (the user is still held, so the next batch follows it there); a user's message kept on
the main path, its reply diverted (the message waits in the state for it); and the ledger
written and struck off at once (a later place is never lost to the strike of an earlier
one). The loss itself was the embedded broker's (`edges.faust.skipped`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest
from tests.unit.segmenter.test_fair_share import (
    Forwarder,
    _encoded,
    overflow_batch,
    sent_places,
    through,
)
from tests.unit.segmenter.test_handler import exchange, rig

from memstream.adapters.redis.connection import open_client
from memstream.adapters.redis.tree import RedisTree
from memstream.contracts.records import RawEvent
from memstream.domain.fair_share import Share
from memstream.domain.ids import segment_id
from memstream.domain.models import InputEvent
from memstream.segmenter.fair_share import FairShare
from memstream.settings import Settings

pytestmark = pytest.mark.integration

QUIET = "globex:bo"


@pytest.fixture
async def ledger(settings: Settings) -> AsyncIterator[RedisTree]:
    redis = open_client(settings.redis.url)
    yield RedisTree(redis, settings.redis.namespace)
    await redis.aclose()


class TurnsLog:
    """Records of one partition of the turns topic, at consecutive offsets."""

    def __init__(self) -> None:
        self.records: list[RawEvent] = []

    def append(self, events: Sequence[InputEvent], *at: float) -> list[RawEvent]:
        added = [
            RawEvent(_encoded(e), "turns", 0, len(self.records) + i, stamp)
            for i, (e, stamp) in enumerate(zip(events, at, strict=True))
        ]
        self.records += added
        return added


async def test_a_user_s_records_on_both_paths_are_written_once_and_in_order(
    ledger: RedisTree,
) -> None:
    forwarder, log = Forwarder(), TurnsLog()
    r = rig()
    share = FairShare(
        r.segmenter,
        ledger=ledger,
        queues=ledger,
        forwarder=forwarder,
        overflow_topic="overflow",
        overflow_partitions=6,
        share=Share(rate=100.0, burst=1.0),
        clock=lambda: 1000.0,
    )
    written = []
    # The question takes the burst; its answer, a millisecond later, is diverted: the
    # question waits in the state for it on the main path (a batch boundary between paths).
    first = await through(share, log.append(exchange(0, QUIET), 100.0, 100.001))
    written += first.segments
    assert first.segments == [] and sent_places(forwarder.sent) == [(0, 1)]
    # The user is held: its next exchange follows the answer into the overflow.
    written += (await through(share, log.append(exchange(1, QUIET), 110.0, 110.5))).segments
    assert sent_places(forwarder.sent) == [(0, 1), (0, 2), (0, 3)]

    # The overflow handles the answer; before it strikes it off, the main path splits the
    # user's next batch: still held, so it follows too.
    answer = overflow_batch(forwarder.sent[:1], log.records)
    written += (await r.segmenter.handle_batch(answer, progress={})).segments
    written += (await through(share, log.append(exchange(2, QUIET), 120.0, 120.5))).segments
    assert sent_places(forwarder.sent)[3:] == [(0, 4), (0, 5)]
    await share.struck_off({QUIET: [(0, 1)]})
    assert await ledger.held([QUIET]) == {QUIET}

    written += (
        await share.handle_overflow(overflow_batch(forwarder.sent[1:], log.records))
    ).segments
    assert await ledger.held([QUIET]) == set()
    # Caught up: the main path takes the user again.
    written += (await through(share, log.append(exchange(3, QUIET), 130.0, 130.5))).segments
    assert len(sent_places(forwarder.sent)) == 5
    assert [n.id for n in written] == [segment_id(QUIET, [f"q{n}", f"a{n}"]) for n in range(4)]


async def test_a_later_place_written_while_an_earlier_is_struck_off_keeps_the_user_held(
    ledger: RedisTree,
) -> None:
    for offset in range(200):
        await asyncio.gather(
            ledger.divert({QUIET: [(0, offset + 1)]}), ledger.release({QUIET: [(0, offset)]})
        )
        assert await ledger.held([QUIET]) == {QUIET}
    assert await ledger.diverted(QUIET) == [(0, 200)]
