"""Run services on top of the embedded stack until SIGINT/SIGTERM, then stop it all in order."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from memstream.settings import Settings
from memstream.tools.embedded.stack import EmbeddedStack

log = logging.getLogger(__name__)

# A long-running part of the pipeline (workers, scheduler, recall API): it receives the
# settings with the stack's endpoints and runs until cancelled.
Service = Callable[[Settings], Coroutine[Any, Any, None]]


async def run_until_signal(
    settings: Settings,
    services: Sequence[Service] = (),
    *,
    on_ready: Callable[[EmbeddedStack], None] | None = None,
    signals: Sequence[signal.Signals] = (signal.SIGINT, signal.SIGTERM),
) -> None:
    """Start the stack, run `services` on it, and wait for a signal.

    A service that returns is done; a service that raises stops everything and the error
    propagates. Services are cancelled before the stack stops, so they can still flush to
    the broker and stores while shutting down.
    """
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for signum in signals:
        loop.add_signal_handler(signum, stopping.set)
    try:
        async with EmbeddedStack(settings) as stack:
            if on_ready is not None:
                on_ready(stack)
            await _supervise(stack.settings(), services, stopping)
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)


async def _supervise(
    settings: Settings, services: Sequence[Service], stopping: asyncio.Event
) -> None:
    tasks = {
        asyncio.create_task(service(settings), name=getattr(service, "__name__", "service"))
        for service in services
    }
    stop_wait = asyncio.create_task(stopping.wait(), name="stop-signal")
    failed: BaseException | None = None
    try:
        pending = {stop_wait, *tasks}
        while stop_wait in pending and failed is None:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done - {stop_wait}:
                if not task.cancelled() and task.exception() is not None:
                    failed = task.exception()
                    log.error("service %s failed; stopping", task.get_name(), exc_info=failed)
    finally:
        for task in (stop_wait, *tasks):
            task.cancel()
        await asyncio.gather(stop_wait, *tasks, return_exceptions=True)
    if failed is not None:
        raise failed
