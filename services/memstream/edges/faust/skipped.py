"""Records the turns agent's consumer stepped over, read back into its batch before the
records that came after them (`domain.offset_gaps`).

The embedded broker hands a consumer at a partition's end a later batch before an earlier
one written at the same time is readable, and the consumer moves on past the earlier one:
its turns were never handled and nothing said so (the fairness benchmark's quiet L1 never
written). Read back at their offsets and put before the record that followed them, they are
handled in their partition's order, so each user's order holds. A real Kafka broker never
exposes a later batch first; there the check finds nothing and reads nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence

from memstream.contracts.records import RawEvent
from memstream.domain.offset_gaps import Skipped, skipped
from memstream.edges.faust.overflow import TurnsReader

log = logging.getLogger(__name__)

# A larger jump is a partition taken over from another worker, not records stepped over.
MOST_SKIPPED = 1024
# Reads of a run stepped over before what is still missing is given up (and logged): the
# records written at the same time as the one that followed them become readable at once.
READS = 4
READ_AGAIN_S = 0.05


class SkippedRecords:
    def __init__(
        self, reader: TurnsReader, *, most: int = MOST_SKIPPED, read_again_s: float = READ_AGAIN_S
    ) -> None:
        self._reader = reader
        self._most = most
        self._read_again_s = read_again_s
        self._next_of: dict[int, int] = {}  # per partition, the offset expected next

    async def filled(self, raws: Sequence[RawEvent]) -> list[RawEvent]:
        """`raws` with the records the consumer stepped over before each, read back."""
        places = [(raw.partition, raw.offset) for raw in raws]
        gaps, self._next_of = skipped(self._next_of, places, self._most)
        if not gaps:
            return list(raws)
        before = {gap.before: await self._read(gap) for gap in gaps}
        filled: list[RawEvent] = []
        for position, raw in enumerate(raws):
            filled += before.get(position, [])
            filled.append(raw)
        return filled

    async def _read(self, gap: Skipped) -> list[RawEvent]:
        wanted = list(gap.offsets)
        found: list[RawEvent] = []
        for attempt in range(READS):
            if attempt:
                await asyncio.sleep(self._read_again_s)
            try:
                found = await self._reader.read(gap.partition, wanted, say_gone=False)
            except Exception as error:  # the batch goes on; what was stepped over is said
                log.error("records stepped over could not be read back: %r", error)
                break
            if len(found) == len(wanted):
                break
        topic, first, last = self._reader.topic, wanted[0], wanted[-1]
        log.warning(
            "the consumer stepped over %s[%d] offsets %d-%d; %d of %d read back",
            topic,
            gap.partition,
            first,
            last,
            len(found),
            len(wanted),
        )
        return found

    def forget(self, partitions: Iterable[int]) -> None:
        """No offset is expected next in `partitions` (taken from this worker): whatever
        offset the consumer starts from when one comes back is no skip."""
        for partition in partitions:
            self._next_of.pop(partition, None)

    async def close(self) -> None:
        await self._reader.close()


class SkippedByTopic:
    """`SkippedRecords` of several turns topics (one per tenant, `contracts.tenant_topics`):
    each topic's partitions are their own sequences of offsets."""

    def __init__(self, by_topic: dict[str, SkippedRecords]) -> None:
        self._by_topic = by_topic

    async def filled(self, raws: Sequence[RawEvent]) -> list[RawEvent]:
        """Each topic's records with what was stepped over, topic after topic: a user's
        records are all in one topic, so each user's order holds."""
        filled: list[RawEvent] = []
        for topic in dict.fromkeys(raw.topic for raw in raws):
            mine = [raw for raw in raws if raw.topic == topic]
            reader = self._by_topic.get(topic)
            filled += mine if reader is None else await reader.filled(mine)
        return filled

    def forget(self, topic: str, partitions: Iterable[int]) -> None:
        if (reader := self._by_topic.get(topic)) is not None:
            reader.forget(partitions)

    async def close(self) -> None:
        for reader in self._by_topic.values():
            await reader.close()
