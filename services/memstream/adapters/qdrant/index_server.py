"""The vector index of this process served to API processes over a Unix socket.

The in-process engine (qdrant-edge) locks its shard to the process that opened it, so an API
in a process of its own (`memstream up` with `MEMSTREAM_UP_API_PROCESS`) cannot open the
index; it asks the process that owns it, through `remote.RemoteIndex`. The server runs on a
thread of its own with its own event loop, not on the owner's: a step of the segmenter holds
that loop for tens of milliseconds at a time, and the engine releases the GIL for much of
its work (it is already called from worker threads). Requests of one connection are answered
side by side, each as soon as its call returns.

Two kinds of call go to the owner's loop instead: `upsert` and `user_nodes` read the users'
data keys (sealing) through the owner's Redis client, which belongs to that loop. API
processes make them only for repairs, which are rare.

It also pushes the owner's progress marks to every connection as its segmenter writes them
(`announce`, a listener of `Container.progress_marked`): a frame of request id 0 holding
("progress", (marks, topic)) (topic None: the shared turns topic), which the API process
hands to its waiting reads as the in-process hook would (`recall.writes`). The reads keep
the shared poll as their fallback, so a push lost to a connection made later costs at most
one pause of that poll.

It also pushes the vectors the owner's segmenter has just embedded, as it embeds them
(`announce_vectors`, `RecentVectors.on_kept`), and answers `recent_vectors` for those an API
process missed (connected later): the API's query, usually the message just written, is
then neither embedded a second time (`embedding.recent.KnownVectorsFirst` is the caller) nor
fetched with a round trip of its own.

Frames, both ways: length (u32, of what follows it) | request id (u32) | pickle. A request
is (method, args, kwargs); an answer (True, result) or (False, exception). Pickle, because
both ends are this package in processes one `memstream up` starts, and it carries the
index's own types (nodes, scored ids, sparse vectors, levels) without a codec for each to
keep in step with them. Unpickling runs code the bytes name, so the socket is made mode
0600 before it listens (`unix_socket.listen`): only this user can connect, who can already
read and write the shard's files and the processes' memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pickle
import struct
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from memstream.adapters import unix_socket
from memstream.adapters.socket_clients import PUSH_ID

log = logging.getLogger(__name__)

HEADER = struct.Struct(">II")  # length (of what follows it), request id
MAX_FRAME = 64 * 1024 * 1024  # more than any answer of a page of nodes: a broken peer
BACKLOG = 128
PROGRESS = "progress"
DIM = "dim"
RECENT_VECTORS = "recent_vectors"
VECTORS = "vectors"  # pushed: (text, vector) pairs the owner's segmenter has just embedded
# What API processes call on the index (recall, forget, repair, readiness).
SERVED = frozenset(
    {
        "ping",
        "search_leaves",
        "get",
        "count",
        "delete_user",
        "vacuum",
        "delete_points",
        "total",
        "users_with_points",
        "versions",
        "upsert",
        "user_nodes",
    }
)
# These read the users' data keys through the owner's Redis client (see the module doc).
ON_OWNER_LOOP = frozenset({"upsert", "user_nodes"})

Lookup = Callable[[Sequence[str]], list[list[float] | None]]


def frame(request_id: int, payload: Any) -> bytes:
    body = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body) + 4, request_id) + body


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, Any]:
    """The next frame's id and value; IncompleteReadError at the end of the stream."""
    length, request_id = HEADER.unpack(await reader.readexactly(HEADER.size))
    if length < 4 or length > MAX_FRAME:
        raise ValueError(f"a frame of {length} bytes")
    return request_id, pickle.loads(await reader.readexactly(length - 4))


class IndexServer:
    """Serves `index` (and `recent`, the owner's recent vectors) at `path` from a thread.

    `start()` returns once the socket listens; `stop()` closes it and its connections.
    """

    def __init__(
        self,
        index: Any,
        path: Path,
        *,
        dim: int,
        owner_loop: asyncio.AbstractEventLoop,
        recent: Lookup | None = None,
    ) -> None:
        self._index = index
        self._path = path
        self._dim = dim
        self._owner = owner_loop
        self._recent = recent
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="index-server", daemon=True)

    @property
    def path(self) -> Path:
        return self._path

    def start(self) -> None:
        self._thread.start()
        self._started.wait()
        if self._error is not None:
            self._thread.join()
            raise self._error

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join()
        self._path.unlink(missing_ok=True)

    def announce(self, marks: Mapping[int, int], topic: str | None = None) -> None:
        """The owner's segmenter has marked its progress in a turns topic (None: the shared
        one): push the marks to every API process connected. Called on the owner's loop;
        the sending is the server's."""
        self._push_soon((PROGRESS, (dict(marks), topic)))

    def announce_vectors(self, pairs: Sequence[tuple[str, list[float]]]) -> None:
        """The owner's segmenter has just embedded these texts (`RecentVectors.on_kept`):
        push them to every API process connected, which then answers a query that is one of
        them without a round trip. Embedding comes before a step's commit and its marks, so
        a read waiting for a message's mark finds its vector there. Called on the owner's
        loop."""
        self._push_soon((VECTORS, list(pairs)))

    def _push_soon(self, message: tuple[str, Any]) -> None:
        """`message` to every connection, sent by the server's loop (from the owner's)."""
        if self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the server's loop has just stopped
                self._loop.call_soon_threadsafe(self._push_message, message)

    def _push_message(self, message: tuple[str, Any]) -> None:
        if not self._writers:
            return
        data = frame(PUSH_ID, message)
        for writer in list(self._writers):
            if not writer.is_closing():
                writer.write(data)

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        connections: set[asyncio.Task[None]] = set()

        async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            connections.add(task)
            try:
                await self._connection(reader, writer)
            finally:
                connections.discard(task)

        try:
            listener = unix_socket.listen(self._path, BACKLOG)
            server = await asyncio.start_unix_server(connected, sock=listener)
        except BaseException as exc:
            self._error = exc
            self._started.set()
            return
        log.info("index server listening at %s", self._path)
        self._started.set()
        async with server:
            await self._stopping.wait()
            server.close()
            for task in list(connections):
                task.cancel()
            await asyncio.gather(*connections, return_exceptions=True)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        answering: set[asyncio.Task[None]] = set()
        self._writers.add(writer)
        try:
            while True:
                try:
                    request_id, request = await read_frame(reader)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                except (ValueError, pickle.UnpicklingError) as exc:
                    log.warning("index server: closing a connection that sent %s", exc)
                    return
                task = asyncio.create_task(self._answer(writer, request_id, request))
                answering.add(task)
                task.add_done_callback(answering.discard)
        finally:
            self._writers.discard(writer)
            for task in list(answering):
                task.cancel()
            await asyncio.gather(*answering, return_exceptions=True)
            writer.close()

    async def _answer(self, writer: asyncio.StreamWriter, request_id: int, request: Any) -> None:
        try:
            answer: tuple[bool, Any] = (True, await self._call(request))
        except Exception as exc:  # the caller's exception, raised again in its process
            answer = (False, exc)
        try:
            data = frame(request_id, answer)
        except Exception as exc:  # an exception that does not pickle
            data = frame(request_id, (False, RuntimeError(f"{type(exc).__name__}: {exc}")))
        if not writer.is_closing():
            writer.write(data)

    async def _call(self, request: Any) -> Any:
        method, args, kwargs = request
        if method == DIM:
            return self._dim
        if method == RECENT_VECTORS:
            [texts] = args
            return self._recent(texts) if self._recent is not None else [None] * len(texts)
        if method not in SERVED:
            raise ValueError(f"the index server does not serve {method!r}")
        call: Coroutine[Any, Any, Any] = getattr(self._index, method)(*args, **kwargs)
        if method in ON_OWNER_LOOP:
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(call, self._owner))
        return await call


@contextlib.contextmanager
def serving(
    index: Any, path: Path, *, dim: int, recent: Lookup | None = None
) -> Iterator[IndexServer]:
    """An `IndexServer` of the running loop's `index`, started, and stopped on exit."""
    server = IndexServer(index, path, dim=dim, owner_loop=asyncio.get_running_loop(), recent=recent)
    server.start()
    try:
        yield server
    finally:
        server.stop()
