"""The embedded stack on its own event loop in a thread, for synchronous callers: a pytest
session fixture, a notebook, an evaluation script.

    with BackgroundStack(settings) as stack:
        run_anything(stack.settings())

Its loop is independent of the caller's, so async code on any loop (a test's, Faust's) can
use the endpoints while the stack's process handling keeps running.
"""

from __future__ import annotations

import asyncio
import threading
from types import TracebackType
from typing import Any

from memstream.entrypoints.embedded.stack import EmbeddedStack
from memstream.settings import Settings


class BackgroundStack:
    """Start on `__enter__`, stop on `__exit__`; the start error, if any, is raised here."""

    def __init__(self, settings: Settings, **stack_options: Any) -> None:
        self._stack = EmbeddedStack(settings, **stack_options)
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="memstream-stack", daemon=True)

    def __enter__(self) -> EmbeddedStack:
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            raise self._error
        return self._stack

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join()
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            async with self._stack:
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:  # handed to the caller's thread
            self._error = exc
        finally:
            self._ready.set()
