"""Pacing rebuilds: the next chunk of each unfinished rebuild, at a bounded rate.

The segmenter lists a user whose rebuild has leaves left as due (`RebuildQueue.rebuilds_due`)
when it commits a chunk. Every `period_s` the pacer sends `rebuild.v1` (the job's id: "go
on") for the users due longest, at most `users_per_run`, so the deployment's rebuilds
re-derive at most `leaves_per_s` leaves a second whatever their number. The command travels
on the turns topic behind the user's live turns: a rebuild never holds them back by more
than one chunk. A user sent a command is leased for `lease_s`: if the command is lost (the
worker died before committing the chunk and its offset), it is sent again after that.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from memstream.contracts.codec import encode_rebuild
from memstream.contracts.records import Outbound
from memstream.contracts.tenant_topics import TurnsTopic, topic_of
from memstream.ports import Publisher, RebuildQueue

log = logging.getLogger(__name__)

SHORTEST_PERIOD_S = 0.2  # a faster rate sends more users per run instead
LEASE_S = 30.0


@dataclass(frozen=True, slots=True)
class Pace:
    period_s: float
    users_per_run: int


def pace(leaves_per_s: float, chunk_leaves: int) -> Pace:
    """How often and for how many users, so that chunks of `chunk_leaves` add up to at most
    `leaves_per_s` (one chunk per period when that period is long enough)."""
    period = chunk_leaves / leaves_per_s
    if period >= SHORTEST_PERIOD_S:
        return Pace(period, 1)
    users = max(1, math.ceil(SHORTEST_PERIOD_S * leaves_per_s / chunk_leaves))
    return Pace(users * chunk_leaves / leaves_per_s, users)


class RebuildPacer:
    def __init__(
        self,
        *,
        tree: RebuildQueue,
        publisher: Publisher,
        turns_topic: TurnsTopic,
        users_per_run: int,
        lease_s: float = LEASE_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._tree = tree
        self._publisher = publisher
        self._turns = topic_of(turns_topic)
        self._users = users_per_run
        self._lease = lease_s
        self._clock = clock

    async def run_once(self) -> int:
        """Send the next chunk's command to the users due longest; returns how many."""
        now = self._clock()
        events: list[Outbound] = []
        for user in await self._tree.rebuilds_due(now, self._users):
            job = await self._tree.rebuild_job(user)
            if job is None or job.finished:
                continue
            events.append(Outbound(self._turns(user), user, encode_rebuild(user, job.rebuild_id)))
        # The lease first: a chunk committed before a later lease would be leased anyway, and
        # its next chunk would wait the whole lease. A publish that fails is sent again then.
        for event in events:
            await self._tree.lease_rebuild(event.key, now + self._lease)
        if events:
            await self._publisher.publish(events)
        return len(events)
