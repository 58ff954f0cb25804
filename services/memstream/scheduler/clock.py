"""Wall-clock window closure, for users who go quiet.

The scheduler never touches window state. It publishes a `tick.v1` command, keyed by user,
onto the turns topic for every user whose earliest due time (kept by the segmenter in Redis)
has passed; the segmenter then closes what the wall clock allows, in order with the user's
turns. It also asks for degraded nodes (written by the offline fallback) to be consolidated
again once an LLM endpoint is configured, and its first run puts the degraded nodes an older
version marked only across users into each user's own index
(`DueIndex.index_degraded_by_user`). Running two schedulers is harmless (ticks are
idempotent, the indexing too) but wasteful: deploy it as one replica.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from memstream.contracts.codec import encode_tick, encode_window
from memstream.contracts.records import Outbound
from memstream.contracts.tenant_topics import TurnsTopic, topic_of
from memstream.domain.models import Level, Window, WindowClosed
from memstream.ports import DueIndex, Publisher
from memstream.scheduler.rebuilds import RebuildPacer

log = logging.getLogger(__name__)

# A degraded node is queued again at once, then after these waits, doubling: with an
# endpoint that keeps failing, every tick re-queuing every degraded node would only add
# load to it (and keep a backlog of closures that fail again).
RETRY_FIRST_WAIT = timedelta(minutes=1)
RETRY_LONGEST_WAIT = timedelta(hours=1)
_DOUBLINGS = 6  # the first wait doubled this often passes the longest


class ClockTicker:
    def __init__(
        self,
        *,
        tree: DueIndex,
        publisher: Publisher,
        turns_topic: TurnsTopic,
        windows_topic: str,
        retry_degraded: bool,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._tree = tree
        self._publisher = publisher
        self._turns = topic_of(turns_topic)
        self._windows = windows_topic
        self._retry_degraded = retry_degraded
        self._clock = clock
        self._degraded_indexed = False
        # By degraded node: how often it was queued again, and when it may be next. Kept in
        # memory: a restarted scheduler queues each once at once, then waits again.
        self._retries: dict[tuple[str, str], tuple[int, datetime]] = {}

    async def tick_due_users(self) -> int:
        """Publish a tick for every user with something the clock may close; returns how many."""
        now = self._clock()
        users = await self._tree.due_users(now)
        if users:
            await self._publisher.publish(
                [Outbound(self._turns(user), user, encode_tick(user, now)) for user in users]
            )
        return len(users)

    async def reconsolidate_degraded(self) -> int:
        """Ask the consolidator to rewrite L2-L5 nodes the offline fallback wrote: each at
        once, then after a wait that doubles while it stays degraded (`RETRY_FIRST_WAIT`
        up to `RETRY_LONGEST_WAIT`)."""
        if not self._retry_degraded:
            return 0
        now = self._clock()
        degraded = await self._tree.degraded()
        # A node written again by the LLM is no longer listed: its count starts afresh.
        listed = set(degraded)
        self._retries = {k: v for k, v in self._retries.items() if k in listed}
        closures: list[Outbound] = []
        for user_id, node_id in degraded:
            attempts, due = self._retries.get((user_id, node_id), (0, now))
            if due > now:
                continue
            wait = min(RETRY_FIRST_WAIT * 2 ** min(attempts, _DOUBLINGS), RETRY_LONGEST_WAIT)
            self._retries[user_id, node_id] = (attempts + 1, now + wait)
            stored = await self._tree.get(user_id, node_id)
            if stored is None or stored.node.level == Level.SEGMENT:
                continue  # L1 keeps its offline rendering: the raw turns are not kept
            node = stored.node
            window = Window(user_id, node.level, node.t_start, node.t_end, node.session_id)
            closure = WindowClosed(window, "clock", node.id, node.parent_id)
            closures.append(Outbound(self._windows, user_id, encode_window(closure)))
        if closures:
            await self._publisher.publish(closures)
        return len(closures)

    async def run_once(self) -> None:
        ticked = await self.tick_due_users()
        retried = await self.reconsolidate_degraded()
        if ticked or retried:
            # Debug: a busy deployment has users due at every tick.
            log.debug("clock: ticked %d users, re-queued %d degraded nodes", ticked, retried)
        if not self._degraded_indexed:
            # After the tick, so that a failure here never holds up closing windows: the next
            # run tries again.
            copied = await self._tree.index_degraded_by_user()
            self._degraded_indexed = True
            if copied:
                log.info("clock: %d degraded nodes of an older version indexed by user", copied)


def build_scheduler(
    ticker: ClockTicker,
    interval_s: float,
    rebuilds: RebuildPacer | None = None,
    rebuild_period_s: float = 1.0,
) -> AsyncIOScheduler:
    """An APScheduler that runs the ticker every `interval_s` (and the rebuilds' pacer every
    `rebuild_period_s`), never two runs of one at once."""
    quieten_job_runs()
    scheduler = AsyncIOScheduler(timezone=UTC)
    scheduler.add_job(
        ticker.run_once,
        "interval",
        seconds=interval_s,
        max_instances=1,
        coalesce=True,
        next_run_time=datetime.now(UTC),
        id="memstream-clock",
    )
    if rebuilds is not None:
        scheduler.add_job(
            rebuilds.run_once,
            "interval",
            seconds=rebuild_period_s,
            max_instances=1,
            coalesce=True,
            id="memstream-rebuilds",
        )
    return scheduler


# The logger APScheduler's default executor reports each run of a job on.
JOB_RUNS_LOGGER = "apscheduler.executors.default"


class JobRunsAtDebug(logging.Filter):
    """APScheduler's lines for each run of a job ("Running job", "executed successfully") at
    DEBUG instead of INFO: the rebuild pacer runs every fraction of a second, and those two
    lines a run were most of a worker's log. Warnings (a missed run) and errors stay as they
    are."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO:
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def quieten_job_runs() -> None:
    """Put `JobRunsAtDebug` on APScheduler's executor logger (once per process)."""
    runs = logging.getLogger(JOB_RUNS_LOGGER)
    if not any(isinstance(f, JobRunsAtDebug) for f in runs.filters):
        runs.addFilter(JobRunsAtDebug())
