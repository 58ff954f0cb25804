"""A bounded shutdown: after the stop signal, a process gets a grace period, then it goes.

A graceful stop waits for the Faust agents to finish their batch, the producer to flush and
the stores to close. An agent stuck in a call that never returns (an LLM endpoint that holds
the connection open, say) would make that wait endless, and the orchestrator would then kill
the pod outright after its own grace period, leaving the model process behind on a plain
host. So a watchdog thread (it runs even if the event loop is stuck) starts at the signal;
when `grace_s` passes before the process has exited, it kills the process's children and
exits at once. Nothing is lost by that: offsets are committed only after durable writes, so
the batch in flight is replayed, idempotently, by the next worker.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

log = logging.getLogger(__name__)

FORCED_EXIT_CODE = 1


@asynccontextmanager
async def bounded_by(stopping: asyncio.Event, grace_s: float) -> AsyncIterator[None]:
    """While in the block: once `stopping` is set, the process has `grace_s` seconds to exit."""

    async def arm() -> None:
        await stopping.wait()
        log.info("stopping; exiting in at most %.0f s", grace_s)
        timer = threading.Timer(grace_s, force_exit, args=(grace_s,))
        timer.daemon = True  # a process that exits in time does not wait for it
        timer.start()

    watchdog = asyncio.create_task(arm(), name="shutdown-watchdog")
    try:
        yield
    finally:
        # The block is left on the way out: the timer, if armed, keeps running until exit.
        if not watchdog.done():
            watchdog.cancel()
            with suppress(asyncio.CancelledError):
                await watchdog


def force_exit(grace_s: float) -> None:
    """Kill every child process, then leave without waiting for anything."""
    children = multiprocessing.active_children()
    print(
        f"memstream: not stopped {grace_s:.0f} s after the stop signal; killing "
        f"{len(children)} child process(es) and exiting",
        file=sys.stderr,
        flush=True,
    )
    for child in children:
        with suppress(OSError):
            child.kill()
    os._exit(FORCED_EXIT_CODE)
