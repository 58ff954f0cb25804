"""Running the recall API with uvicorn: as a part of the runner (stopped by cancellation) or
in a background thread (tests, benchmarks, notebooks).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator
from types import TracebackType
from typing import Any, TypeVar

import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from memstream.settings import Settings

T = TypeVar("T")
# Request line and headers together: a recall request needs well under 2 KiB.
MAX_HEAD_BYTES = 16 * 1024


class _SupervisedServer(uvicorn.Server):
    """A uvicorn server that leaves signals to its supervisor and is stopped by cancellation;
    `on_started` runs once its sockets accept connections."""

    def __init__(
        self, config: uvicorn.Config, on_started: Callable[[], None] | None = None
    ) -> None:
        super().__init__(config)
        self._on_started = on_started

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and self._on_started is not None:
            self._on_started()


def read_deadline(base: type[asyncio.Protocol], timeout_s: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol `base`, closing a connection whose next request has not been
    read whole (headers and body) within `timeout_s`.

    uvicorn has no such timeout: its keep-alive timer stops at the first byte of a request,
    so a client trickling header bytes (slowloris) holds a connection forever. The clock
    starts when the connection opens and again when a response completes; it is stopped by
    the next request being read whole, or by the connection closing.
    """

    class ReadDeadline(base):  # type: ignore[valid-type,misc]
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            # Armed before uvicorn goes on to a pipelined request, so that one is seen as new.
            self._arm()
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(timeout_s, self._expire, self.cycle)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self, waited_from: object) -> None:
            self._deadline = None
            cycle = self.cycle
            unread = cycle is waited_from or (
                cycle is not None and cycle.more_body and not cycle.response_started
            )
            if unread and not self.transport.is_closing():
                self.transport.close()

    return ReadDeadline


def bounded_head(base: type[asyncio.Protocol], max_bytes: int) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol `base`, refusing (400, connection closed) a request whose
    target and headers pass `max_bytes`.

    h11 holds the head to `h11_max_incomplete_event_size`; httptools, which uvicorn takes
    when it is installed, has no such limit and would buffer headers for as long as the read
    deadline lets a client send them. The count is kept in httptools' parser callbacks, so
    it is inert under h11.
    """

    class BoundedHead(base):  # type: ignore[valid-type,misc]
        _head_bytes = 0

        def on_message_begin(self) -> None:
            self._head_bytes = 0
            super().on_message_begin()

        def on_url(self, url: bytes) -> None:
            self._count(len(url))
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._count(len(name) + len(value))
            super().on_header(name, value)

        def _count(self, size: int) -> None:
            self._head_bytes += size
            if self._head_bytes > max_bytes:
                # httptools turns a callback's exception into a parser error: uvicorn
                # answers 400 and closes the connection.
                raise ValueError(f"request head over {max_bytes} bytes")

    return BoundedHead


def head_with_body(base: type[asyncio.Protocol]) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol `base`, sending a response's head in the same write as its
    body: uvicorn writes them apart, and each write is a send system call (on loopback the
    sender's CPU does the peer's receive work too). The head is held until the connection's
    next write, or the loop's next turn at the latest (a body that comes later: a streamed
    answer; a head alone: 100 Continue)."""

    class HeadWithBody(base):  # type: ignore[valid-type,misc]
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(HeldHead(transport))

    return HeadWithBody


class HeldHead:
    """A transport whose writes of a response head wait to go with the next write."""

    def __init__(self, transport: Any) -> None:
        self._transport = transport
        self._head: bytes | None = None
        self._flush: asyncio.Handle | None = None

    def write(self, data: bytes) -> None:
        if self._head is not None:
            self._transport.write(self._held() + data)
        elif isinstance(data, bytes) and data.startswith(b"HTTP/") and data.endswith(b"\r\n\r\n"):
            self._head = data
            self._flush = asyncio.get_running_loop().call_soon(self._write_held)
        else:
            self._transport.write(data)

    def writelines(self, lines: Any) -> None:
        self.write(b"".join(lines))

    def write_eof(self) -> None:
        self._write_held()
        self._transport.write_eof()

    def close(self) -> None:
        self._write_held()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def _write_held(self) -> None:
        if self._head is not None:
            self._transport.write(self._held())

    def _held(self) -> bytes:
        head, self._head = self._head or b"", None
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        return head


def _config(app: FastAPI, host: str, port: int, log_level: str) -> uvicorn.Config:
    # The app carries the settings it was built with (`create_app`); a bare app gets defaults.
    settings = getattr(app.state, "settings", None) or Settings()
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level.lower(),
        lifespan="on",
        http=read_deadline(
            bounded_head(head_with_body(AutoHTTPProtocol), MAX_HEAD_BYTES),
            settings.api.read_timeout_s,
        ),
        timeout_keep_alive=settings.api.keep_alive_timeout_s,
        limit_concurrency=settings.api.max_connections,
        # Bytes uvicorn buffers while waiting for a complete request head (h11; httptools:
        # `bounded_head`).
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
    )


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed, else None (asyncio's own loop).

    The API's process spends much of a request's CPU in the event loop (sockets, callbacks,
    wake-ups from the engine's threads); uvloop does that work in C.
    """
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def listening_socket(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A TCP socket bound to `host:port`. `reuse_port`: several processes (the API's
    workers) bind the same port and the kernel spreads connections over them."""
    # IPPROTO_TCP spelled out: asyncio sets TCP_NODELAY only on sockets that say so, and
    # without it every response waits for the client's delayed ACK (Nagle).
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


async def serve_until_cancelled(
    app: FastAPI,
    host: str,
    port: int,
    log_level: str = "info",
    on_started: Callable[[], None] | None = None,
    *,
    reuse_port: bool = False,
) -> None:
    """Serve until this coroutine is cancelled, then shut down gracefully."""
    server = _SupervisedServer(_config(app, host, port, log_level), on_started)
    sockets = [listening_socket(host, port, reuse_port=True)] if reuse_port else None
    task = asyncio.ensure_future(server.serve(sockets=sockets))
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        server.should_exit = True
        await task
        raise


class BackgroundServer:
    """uvicorn serving `app` on a free loopback port, on its own event loop in a thread.

    with BackgroundServer(recall_app(settings)) as server:
        httpx.get(server.url + "/healthz")
        server.call(lambda: some_coroutine())   # runs on the server's loop
    """

    def __init__(
        self, app: FastAPI, *, host: str = "127.0.0.1", startup_timeout_s: float = 120.0
    ) -> None:
        self.app = app
        self._sock = listening_socket(host, 0)
        self.host, self.port = self._sock.getsockname()[:2]
        self._server = _SupervisedServer(_config(app, host, self.port, "warning"))
        self._timeout = startup_timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="memstream-api", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> BackgroundServer:
        self._thread.start()
        deadline = time.monotonic() + self._timeout
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the API server stopped during startup") from self._error
            if time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise TimeoutError(f"the API server did not start within {self._timeout:.0f} s")
            time.sleep(0.05)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=60)
        self._sock.close()

    def call(self, work: Callable[[], Awaitable[T]], timeout_s: float = 60.0) -> T:
        """Run a coroutine on the server's loop (where its runtime's clients live)."""
        if self._loop is None:
            raise RuntimeError("the API server is not running")

        async def wrapped() -> T:
            return await work()

        coro: Coroutine[Any, Any, T] = wrapped()
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout_s)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            await self._server.serve(sockets=[self._sock])

        try:
            asyncio.run(main())
        except BaseException as exc:  # SystemExit on a failed startup, too
            self._error = exc
