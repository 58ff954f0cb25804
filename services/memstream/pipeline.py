"""Running memstream's workers in this process: the Faust agents and the clock scheduler."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import faust

from memstream.adapters.kafka_lag import consumer_lag
from memstream.bootstrap import Runtime
from memstream.consolidator.handler import Consolidator
from memstream.scheduler.clock import build_scheduler
from memstream.segmenter.handler import Segmenter
from memstream.settings import Settings
from memstream.workers import build_faust_app

log = logging.getLogger(__name__)


@dataclass
class RunningPipeline:
    app: faust.App
    segmenter: Segmenter | None
    consolidator: Consolidator | None


@asynccontextmanager
async def run_pipeline(
    runtime: Runtime,
    *,
    segmenter: bool = True,
    consolidator: bool = True,
    scheduler: bool = True,
    fast_rebalance: bool = False,
) -> AsyncIterator[RunningPipeline]:
    """Start the chosen roles; stop them on exit. `fast_rebalance` suits one-process runs."""
    s = runtime.settings
    seg = runtime.segmenter() if segmenter else None
    con = runtime.consolidator() if consolidator else None
    timeouts = (
        {
            "broker_session_timeout": 6.0,
            "broker_heartbeat_interval": 1.0,
            "broker_rebalance_timeout": 6.0,
        }
        if fast_rebalance
        else {}
    )
    app = build_faust_app(
        app_id=s.consumer_group,
        bootstrap=s.kafka_bootstrap,
        turns_topic=runtime.catalog.turns.name,
        windows_topic=runtime.catalog.windows.name,
        segmenter=seg,
        consolidator=con,
        batch_size=s.consume_batch_size,
        datadir=str(s.data_dir / "faust"),
        **timeouts,
    )
    clock = build_scheduler(runtime.ticker(), s.clock_interval_s) if scheduler else None
    await app.start()
    if clock is not None:
        clock.start()
    try:
        yield RunningPipeline(app, seg, con)
    finally:
        if clock is not None:
            clock.shutdown(wait=False)
        await app.stop()


async def wait_caught_up(
    runtime: Runtime, users: list[str], *, timeout_s: float, poll_s: float = 0.5
) -> None:
    """Return once both consumers have no lag and no user has a window left open.

    Checked twice in a row, since a closure can be in flight between the two topics.
    """
    topics = [runtime.catalog.turns.name, runtime.catalog.windows.name]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    quiet_polls = 0
    while quiet_polls < 2:
        if loop.time() > deadline:
            raise TimeoutError(f"consolidation did not catch up within {timeout_s:.0f} s")
        await asyncio.sleep(poll_s)
        lag = await consumer_lag(
            runtime.settings.kafka_bootstrap, runtime.settings.consumer_group, topics
        )
        open_windows = 0
        for user in users:
            state = await runtime.tree.load_state(user)
            open_windows += len(state["open_windows"]) if state else 1
        quiet_polls = quiet_polls + 1 if sum(lag.values()) == 0 and open_windows == 0 else 0


async def serve_everything(settings: Settings) -> None:
    """Workers, clock and recall API on one runtime, until cancelled (`memstream up`).

    One runtime because Qdrant's local mode admits one client per data directory.
    """
    from memstream.bootstrap import open_runtime
    from memstream.recall.api import create_app
    from memstream.recall.server import serve_until_cancelled

    runtime = await open_runtime(settings)
    try:
        async with run_pipeline(runtime, fast_rebalance=True):
            app = create_app(runtime)
            await serve_until_cancelled(
                app, settings.api_host, settings.api_port, settings.log_level
            )
    finally:
        await runtime.close()
