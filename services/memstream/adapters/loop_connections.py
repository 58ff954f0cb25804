"""One connection per event loop to a Unix-socket server of the same stack (the model
server, the index server).

Streams belong to the event loop that opened them, and a process may run more than one
(a test's and a server's): each loop gets a connection of its own, opened on its first use
and opened anew once it failed or its server closed it. The opening is shared and shielded:
a caller that gives up leaves it to the others waiting for it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Generic, Protocol, TypeVar


class Closable(Protocol):
    @property
    def closed(self) -> bool: ...

    async def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


class PerLoop(Generic[C]):
    """The connections `open_` makes, one per running event loop."""

    def __init__(self, open_: Callable[[], Awaitable[C]]) -> None:
        self._open = open_
        self._opening: dict[asyncio.AbstractEventLoop, asyncio.Future[C]] = {}

    async def get(self) -> C:
        """This loop's connection, opened if it has none (or none that works)."""
        loop = asyncio.get_running_loop()
        opening = self._opening.get(loop)
        if (
            opening is not None
            and opening.done()
            and (opening.exception() is not None or opening.result().closed)
        ):
            opening = None  # failed or gone: open anew
        if opening is None:
            self._opening = {lp: c for lp, c in self._opening.items() if not lp.is_closed()}
            opening = self._opening[loop] = asyncio.ensure_future(self._open())
        return await asyncio.shield(opening)

    async def close(self) -> None:
        """Close this loop's connection (the next `get` opens another)."""
        opening = self._opening.pop(asyncio.get_running_loop(), None)
        if opening is None:
            return
        if not opening.done():
            opening.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await (await opening).close()
