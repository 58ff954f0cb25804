"""The turns agent's pauses of the tenants' turns topics (`domain.topic_pauses`), applied to
Faust's consumer.

A paused partition is one the consumer does not fetch: its records stay in the log, its
committed offset stays after the last record the agent handled (Faust commits acked
records only), and a restart or a rebalance reads it from there. The records are counted
against their topic's bucket as the consumer hands them to the stream (a Faust sensor's
`on_message_in`), not as the agent takes them, and the record that puts a topic in debt
pauses it there and then: the fetch loop runs round after round while the agent handles a
batch, and a pause left to the next tick let a whole backlog through on a loaded loop.
Faust's own flow control pauses and resumes partitions too: it pauses every
assigned one at a rebalance and resumes them all once done, and it resumes a partition
whose stream buffer drained. So the pauses are applied again at every tick
(`PAUSE_TICK_S`) to whatever the consumer holds now, and only the partitions this
controller paused are ever resumed by it. A pause never drops what was already fetched
(`_pause`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import faust

from memstream.contracts.records import RawEvent
from memstream.domain.fair_share import Share, served_first
from memstream.domain.topic_pauses import TRICKLE_STEPS, Pauses, decided, took

log = logging.getLogger(__name__)

PAUSE_TICK_S = 0.01


class TopicPauses:
    """Counts each turns topic's records as they are fetched and pauses the topics whose
    tenant is over its share."""

    def __init__(
        self,
        topics: Sequence[str],
        share: Share,
        *,
        behind_s: float,
        longest_s: float,
        trickle_steps: int = TRICKLE_STEPS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._topics = frozenset(topics)
        self._share = share
        self._behind_s = behind_s
        self._longest_s = longest_s  # a paused topic's burst goes through over this time
        self._trickle_steps = trickle_steps  # the trickles its burst goes through in
        self._clock = clock
        self._state = Pauses()
        self._behind_until: dict[str, float] = {}  # per topic: behind until then
        self._ours: set[Any] = set()  # the partitions this controller paused
        self._trickles: dict[str, int] = {}  # per topic, its resumes by the longest wait
        self.pauses = 0  # times a topic was paused (for the logs and tests)

    @property
    def paused(self) -> frozenset[str]:
        return self._state.paused

    def ordered(self, raws: Sequence[RawEvent]) -> list[RawEvent]:
        """A batch taken, the records of topics not paused first (each user's order holds);
        a topic whose oldest record of the batch waited longer than `behind_s` is behind."""
        now = self._clock()
        oldest: dict[str, float] = {}
        for raw in raws:
            if raw.timestamp is not None:
                oldest[raw.topic] = min(oldest.get(raw.topic, raw.timestamp), raw.timestamp)
        for topic, stamp in oldest.items():
            if now - stamp > self._behind_s:
                self._behind_until[topic] = now + self._behind_s
        # A user is in one topic, so each user's order holds; a tenant within its share is
        # not handled behind what a held-back one's fetch or trickle brought.
        order = served_first([raw.topic for raw in raws], self._state.held_back(now, self._share))
        return [raws[i] for i in order]

    def message_in(self, topic: str, app: Any, sent_at: float | None = None) -> None:
        """A record of `topic`, sent at `sent_at` (broker time), handed to the stream:
        counted, and the topic paused at once if that put it in debt while it would delay
        another."""
        if topic not in self._topics:
            return
        self._state = took(self._state, {topic: 1}, self._clock(), self._share, sent_at=sent_at)
        if topic not in self._state.paused and self._state.buckets[topic].tokens < 0:
            self.tick(app)

    def sensor(self, app: Any) -> faust.Sensor:
        """The Faust sensor that tells `message_in` of every record the consumer takes."""
        return _MessagesIn(self, app)

    def _decide(self, now: float) -> None:
        before = self._state.paused
        behind = [topic for topic, until in self._behind_until.items() if now < until]
        self._state = decided(
            self._state,
            now,
            self._share,
            longest_s=self._longest_s,
            behind=behind,
            steps=self._trickle_steps,
        )
        for topic in self._state.trickling & before:
            self._trickles[topic] = self._trickles.get(topic, 0) + 1
        for topic in self._state.paused - before:
            self.pauses += 1
            log.info("paused %s: its tenant is over its share", topic)
        for topic in before - self._state.paused:
            log.info("resumed %s", topic)

    def apply(self, consumer: Any) -> None:
        """The pauses decided and applied to Faust's `consumer` (its partitions of now)."""
        self._decide(self._clock())
        try:
            assigned = set(consumer.assignment())
        except Exception:  # not started, or between two assignments: next tick
            return
        wanted = {tp for tp in assigned if tp.topic in self._state.paused}
        for topic in self._state.trickling:
            # One partition fetched at a time, a different one at each longest wait.
            mine = sorted((tp for tp in assigned if tp.topic == topic), key=lambda tp: tp.partition)
            if mine:
                kept = mine[self._trickles.get(topic, 0) % len(mine)]
                wanted |= set(mine) - {kept}
        self._ours &= assigned
        resumed = self._ours - wanted
        if resumed:
            consumer.resume_partitions(resumed)
            self._ours -= resumed
        active = consumer._get_active_partitions()
        missing = {tp for tp in wanted if tp not in consumer._paused_partitions or tp in active}
        if missing:
            _pause(consumer, missing)
        self._ours |= wanted

    def tick(self, app: Any) -> None:
        """The pauses applied to `app`'s consumer; none while it rebalances (Faust pauses
        everything then, and resumes it once done: the next tick pauses again)."""
        if getattr(app, "rebalancing", False):
            return
        try:
            self.apply(app.consumer)
        except Exception as error:  # a bug here must not stop the agent's work
            log.warning("pausing the tenants' turns topics failed: %r", error)

    async def run(self, app: Any) -> None:
        """`tick` every `PAUSE_TICK_S` while `app` runs: a paused topic is resumed when its
        bucket refills, whether or not a batch comes meanwhile."""
        while True:
            await asyncio.sleep(PAUSE_TICK_S)
            self.tick(app)


def _pause(consumer: Any, tps: set[Any]) -> None:
    """`tps` paused from the consumer's next fetch on. Faust's `pause_partitions` takes them
    out of the set of active partitions in place, and the fetch being handed to the streams
    holds that very set: the rest of its records of `tps` would be dropped, though the
    consumer's position has passed them (a gap Faust then commits past). A new set leaves
    that fetch whole; a drained stream buffer putting one back is paused again next tick."""
    consumer._paused_partitions.update(tps)
    consumer._active_partitions = set(consumer._get_active_partitions()) - tps


class _MessagesIn(faust.Sensor):
    def __init__(self, pauses: TopicPauses, app: Any) -> None:
        super().__init__()
        self._pauses = pauses
        self._app = app

    def on_message_in(self, tp: Any, offset: int, message: Any) -> None:
        self._pauses.message_in(tp.topic, self._app, getattr(message, "timestamp", None))
