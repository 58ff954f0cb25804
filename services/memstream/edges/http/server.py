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

T = TypeVar("T")


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


def _config(app: FastAPI, host: str, port: int, log_level: str) -> uvicorn.Config:
    # Keep-alive long enough for a benchmark or an agent reusing its connection.
    return uvicorn.Config(
        app, host=host, port=port, log_level=log_level.lower(), lifespan="on", timeout_keep_alive=30
    )


def listening_socket(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A TCP socket bound to `host:port`. `reuse_port`: several processes (the API's
    workers) bind the same port and the kernel spreads connections over them."""
    # IPPROTO_TCP spelled out: asyncio sets TCP_NODELAY only on sockets that say so, and
    # without it every response waits ~40 ms for a delayed ACK (Nagle).
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
