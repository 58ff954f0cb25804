"""The API process's side of `model_server`: requests over the Unix socket, on the event loop.

One connection per event loop, several requests in flight on it (each answer names its
request). Nothing runs on another thread: a request is one write and its answer one read
when the loop sees it, where a call to a model process of one's own goes through two
threads of `concurrent.futures` and their wake-ups.

A server that is not there yet (it binds its socket once its model is warm) is polled for
until `connect_timeout_s`: that is a start. One that goes away later fails the requests in
flight with ConnectionError, and the next request tries to connect once, failing at once
if it cannot (the supervisor restarts the pod; a recall fails fast meanwhile).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memstream.adapters.embedding.model_server import (
    HEADER,
    OK,
    STATUS,
    request_frame,
)
from memstream.adapters.socket_clients import Multiplexed, PerLoop, connect


class ModelServerError(RuntimeError):
    """The server read the request and could not embed it."""


async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, tuple[int, bytes]]:
    """One answer frame: its request id, and its status with its payload."""
    length, request_id = HEADER.unpack(await reader.readexactly(HEADER.size))
    body = await reader.readexactly(length - 4)
    return request_id, (STATUS.unpack_from(body)[0], body[STATUS.size :])


class _Connection(Multiplexed[tuple[int, bytes]]):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        super().__init__(reader, writer, _read_answer, server="model server")

    async def request(self, texts: Sequence[str], alone: bool) -> tuple[int, bytes]:
        return await self.ask(lambda request_id: request_frame(request_id, texts, alone=alone))


class ModelServerClient:
    """`await client.encode(texts)`: the server's unit vectors, a float32 array (`alone`:
    each text in a forward pass of its own)."""

    def __init__(self, path: Path, dim: int, *, connect_timeout_s: float = 300.0) -> None:
        self._path = path
        self._dim = dim
        self._connect_timeout_s = connect_timeout_s
        self._started = False  # connected once: no more waiting for a server to come up
        # Streams belong to one event loop; a client shared by two (a test and a server
        # thread) keeps a connection per loop. Calls that find none wait for one opening.
        self._per_loop: PerLoop[_Connection] = PerLoop(self._open)

    async def encode(self, texts: Sequence[str], *, alone: bool = False) -> Any:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        connection = await self._connection()
        status, payload = await connection.request(texts, alone)
        if status != OK:
            raise ModelServerError(payload.decode("utf-8", "replace"))
        vectors = np.frombuffer(payload, dtype=np.float32)
        if vectors.size != len(texts) * self._dim:
            raise ModelServerError(
                f"{vectors.size} numbers for {len(texts)} texts of {self._dim} dimensions"
            )
        return vectors.reshape(len(texts), self._dim)

    async def _connection(self) -> _Connection:
        return await self._per_loop.get()

    async def _open(self) -> _Connection:
        # Until it has answered once, the server may still be loading its model: wait for it.
        wait_s = 0.0 if self._started else self._connect_timeout_s
        reader, writer = await connect(self._path, wait_s=wait_s, server="model server")
        self._started = True
        return _Connection(reader, writer)

    async def close(self) -> None:
        """Close this event loop's connection (the next request opens another)."""
        await self._per_loop.close()
