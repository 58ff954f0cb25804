"""Logs are for people: a rebuild paced by the scheduler writes a few INFO lines, not one per
run of the pacer or per window it rewrites."""

from __future__ import annotations

import asyncio
import logging

import pytest
from tests.unit.segmenter.test_rebuild import SECOND, USER, built

from memstream.contracts.codec import decode_input
from memstream.domain.models import RebuildRequested
from memstream.scheduler.clock import (
    JOB_RUNS_LOGGER,
    ClockTicker,
    build_scheduler,
    quieten_job_runs,
)
from memstream.scheduler.rebuilds import RebuildPacer

# APScheduler's start-up lines (each job added, twice, then "Scheduler started"), once.
# Nothing that repeats with the pacer's runs or the windows rewritten.
MOST_INFO_LINES = 5
PERIOD_S = 0.01
DEADLINE_S = 60.0


async def test_a_paced_rebuild_of_a_small_user_writes_a_bounded_number_of_info_lines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    r = await built()
    r.deploy(SECOND, chunk=1)
    ticker = ClockTicker(
        tree=r.tree,
        publisher=r.publisher,
        turns_topic="turns",
        windows_topic="windows",
        retry_degraded=False,
    )
    pacer = RebuildPacer(tree=r.tree, publisher=r.publisher, turns_topic="turns", users_per_run=1)
    caplog.set_level(logging.INFO)
    scheduler = build_scheduler(ticker, 60.0, pacer, PERIOD_S)
    scheduler.start()
    try:
        await r.send(RebuildRequested(USER, "r1"))
        # Every command the pacer publishes is delivered once, however late it comes: a cursor
        # kept across the polls, not the length before each sleep (a command published while
        # the previous one was delivered was never delivered, and the rebuild stalled).
        delivered = 0
        deadline = asyncio.get_running_loop().time() + DEADLINE_S
        while asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(PERIOD_S)
            fresh = r.publisher.sent[delivered:]
            delivered += len(fresh)
            for command in fresh:
                if command.topic != "turns":
                    continue  # the memories the rebuild writes, not the pacer's commands
                event = decode_input(command.value)
                if isinstance(event, RebuildRequested):
                    r.tree.rebuilds[USER] = 0.0  # the lease is not this test's business
                    await r.send(event)
            job = await r.tree.rebuild_job(USER)
            if job is not None and job.finished:
                break
    finally:
        scheduler.shutdown(wait=False)

    job = await r.tree.rebuild_job(USER)
    assert job is not None and job.finished and job.rewritten == 6
    info = [rec for rec in caplog.records if rec.levelno == logging.INFO]
    assert len(info) <= MOST_INFO_LINES, [f"{rec.name}: {rec.getMessage()}" for rec in info]
    assert not [rec for rec in info if "executed successfully" in rec.getMessage()]


def test_job_runs_are_left_out_at_info_and_shown_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    quieten_job_runs()
    runs = logging.getLogger(JOB_RUNS_LOGGER)
    caplog.set_level(logging.INFO)
    runs.info('Running job "a"')
    runs.warning('Run time of job "a" was missed')
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", 'Run time of job "a" was missed')
    ]
    caplog.clear()
    caplog.set_level(logging.DEBUG, logger=JOB_RUNS_LOGGER)
    runs.info('Running job "a"')
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [("DEBUG", 'Running job "a"')]
