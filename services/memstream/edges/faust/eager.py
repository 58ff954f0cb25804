"""Running a coroutine at once, and handing it to a task only if it has to wait.

Faust's consumer delivers each fetched record by creating a task for the delivery and three
more for the events that may interrupt it (`overrides.EagerDrainConsumer`), although the
delivery nearly always finishes without waiting for anything: the stream's buffer has room.
`started` runs the coroutine up to its first wait; only a coroutine that does wait is
awaited the rest of the way (`Started`), under whatever the caller uses to interrupt it.
"""

from __future__ import annotations

from collections.abc import Coroutine, Generator
from typing import Any


class Started:
    """A coroutine already run up to its first wait, `pending` what it waits on: awaiting
    this awaits the coroutine the rest of the way, as if it had been awaited from the
    start (what it is sent, thrown or closed with reaches it)."""

    def __init__(self, coro: Coroutine[Any, Any, Any], pending: Any) -> None:
        self._coro = coro
        self._pending = pending

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, pending = self._coro, self._pending
        while True:
            try:
                sent = yield pending
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as thrown:
                try:
                    pending = coro.throw(thrown)
                except StopIteration as finished:
                    return finished.value
            else:
                try:
                    pending = coro.send(sent)
                except StopIteration as finished:
                    return finished.value


def started(coro: Coroutine[Any, Any, Any]) -> Started | None:
    """Run `coro` until it finishes (None: its result is not needed) or first waits (what
    is left of it, to await). An exception it raises before waiting is raised here."""
    try:
        pending = coro.send(None)
    except StopIteration:
        return None
    return Started(coro, pending)
