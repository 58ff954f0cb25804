"""How long the embedding model's process had no work, while the pipeline ran.

The pipeline can only be as fast as its embedder if the model always has texts waiting:
every moment the model's process spends with no call submitted (waiting for the event loop
to send the next batch, for the next consumed batch, for the stores of a step) is lost.
Unlike a rate, that share is not much moved by other load on the machine, so the ingest
benchmark reports it (`model_idle_share`).

Counted in the parent, on the model process's executor: a call is outstanding from its
submission until the child's result is back in this process (the executor's own thread
marks it done then, whether or not the event loop has read it yet).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from typing import Any


class ModelBusy:
    """Wraps the `submit` of executors for the span of a `with` block, and counts the
    seconds during which none of them had a call outstanding."""

    def __init__(self, executors: Sequence[Executor]) -> None:
        self._executors = executors
        self._lock = threading.Lock()
        self._outstanding = 0
        self._idle_since: float | None = None
        self._idle = 0.0
        self._started = 0.0
        self._ended = 0.0

    def __enter__(self) -> ModelBusy:
        self._started = time.monotonic()
        self._idle_since = self._started
        for executor in self._executors:
            executor.submit = self._counted(executor.submit)  # type: ignore[method-assign]
        return self

    def restart(self) -> None:
        """Count from now on only (what came before, a worker's start, is not measured)."""
        with self._lock:
            self._started = time.monotonic()
            self._idle = 0.0
            if self._idle_since is not None:
                self._idle_since = self._started

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._ended = time.monotonic()
            if self._idle_since is not None:
                self._idle += self._ended - self._idle_since
                self._idle_since = None
        for executor in self._executors:
            del executor.submit  # back to the class's own method

    def _counted(self, submit: Callable[..., Future[Any]]) -> Callable[..., Future[Any]]:
        def counted(*args: Any, **kwargs: Any) -> Future[Any]:
            with self._lock:
                if self._outstanding == 0 and self._idle_since is not None:
                    self._idle += time.monotonic() - self._idle_since
                    self._idle_since = None
                self._outstanding += 1
            future = submit(*args, **kwargs)
            future.add_done_callback(self._finished)
            return future

        return counted

    def _finished(self, _: Future[Any]) -> None:
        with self._lock:
            self._outstanding -= 1
            if self._outstanding == 0 and not self._ended:
                self._idle_since = time.monotonic()

    @property
    def idle_seconds(self) -> float:
        return self._idle

    def idle_share(self) -> float:
        span = (self._ended or time.monotonic()) - self._started
        return self._idle / span if span > 0 else 0.0
