"""Clients of the stack's Unix-socket servers (the model server, the index server): requests
multiplexed on one connection, and one connection per event loop.

`Multiplexed`: each request carries an id, the answers come back by id in any order, so many
calls share one stream; frames of id 0 are the server's own (pushed, unasked). When the
stream fails or closes, every call still waiting fails with ConnectionError.

`PerLoop`: streams belong to the event loop that opened them, and a process may run more
than one (a test's and a server's): each loop gets a connection of its own, opened on its
first use and opened anew once it failed or its server closed it. The opening is shared and
shielded: a caller that gives up leaves it to the others waiting for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Generic, Protocol, TypeVar

PUSH_ID = 0  # the request id of the frames a server sends unasked
CONNECT_POLL_S = 0.1
A = TypeVar("A")
# Reads one frame of answer: (request id, answer).
ReadAnswer = Callable[[asyncio.StreamReader], Awaitable[tuple[int, A]]]


async def connect(
    path: Path, *, wait_s: float, server: str
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A stream to the server listening at `path`, polled for up to `wait_s` while nothing
    listens there yet (its process is still starting); ConnectionError after that."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return await asyncio.open_unix_connection(str(path))
        except OSError as exc:
            if time.monotonic() > deadline:
                raise ConnectionError(f"no {server} at {path}: {exc}") from exc
            await asyncio.sleep(CONNECT_POLL_S)  # a poll with a deadline


class Multiplexed(Generic[A]):
    """One stream to `server` (named in errors) with requests in flight side by side."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        read_answer: ReadAnswer[A],
        *,
        server: str,
        on_push: Callable[[A], None] | None = None,
    ) -> None:
        self._writer = writer
        self._read_answer = read_answer
        self._server = server
        self._on_push = on_push
        self._waiting: dict[int, asyncio.Future[A]] = {}
        self._ids = itertools.count(1)
        self.closed = False
        self._reading = asyncio.ensure_future(self._read_answers(reader))

    async def ask(self, frame_for: Callable[[int], bytes]) -> A:
        """Send the frame `frame_for` makes for a new request id; its answer."""
        if self.closed:
            raise ConnectionError(f"the {self._server} connection is closed")
        request_id = next(self._ids) % 0xFFFFFFFF + 1  # never PUSH_ID
        answer = self._waiting[request_id] = asyncio.get_running_loop().create_future()
        self._writer.write(frame_for(request_id))
        try:
            return await answer
        finally:
            self._waiting.pop(request_id, None)

    async def _read_answers(self, reader: asyncio.StreamReader) -> None:
        error: BaseException = ConnectionError(f"the {self._server} closed the connection")
        try:
            while True:
                request_id, answer = await self._read_answer(reader)
                if request_id == PUSH_ID:
                    if self._on_push is not None:
                        self._on_push(answer)
                    continue
                waiting = self._waiting.get(request_id)
                if waiting is not None and not waiting.done():
                    waiting.set_result(answer)
        except (asyncio.IncompleteReadError, OSError, ValueError) as exc:
            error = ConnectionError(f"the {self._server} connection failed: {exc!r}")
        finally:
            self.closed = True
            for waiting in self._waiting.values():
                if not waiting.done():
                    waiting.set_exception(error)
            self._writer.close()

    async def close(self) -> None:
        self.closed = True
        self._reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reading


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
