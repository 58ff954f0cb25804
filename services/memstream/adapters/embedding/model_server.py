"""One model process for every API process of a pod, reached over a Unix socket.

`MEMSTREAM_API_SHARED_MODEL`: `serve` starts this server before its workers, and each worker
embeds through it (`model_client`) instead of through a model process of its own. One copy
of the model instead of one per worker, and the queries of all workers share its forward
passes. The server is a plain loop on one thread, the model's: it waits for requests, reads
every request the sockets hold, embeds all their texts in one pass (in pieces of at most
`max_texts`) and answers each. Requests that arrive during a pass wait for the next, so a
request never waits for more than the pass in front of it, as with `batching.MicroBatcher`.
A request may ask for its texts each alone (`LocalEmbedder.embed_each`): those share no
forward pass with any other text, theirs or another request's.

The socket is bound only once the model is loaded and warm, so a client that can connect is
answered at the model's speed; a client that comes earlier polls until the socket is there.
It is mode 0600 before it listens (`unix_socket.listen`): only this user's processes can
have their texts embedded by it.

Frames, both ways (lengths and ids big-endian u32):

    request:  length | id | UTF-8 JSON: a list of texts, or {"alone": [texts]}
    answer:   length | id | status | payload
              status 0: the unit vectors as float32, one row per text
              status 1: the error, UTF-8

`length` counts the bytes after it. The server answers the requests of one connection in
the order they came; the id lets a client keep several in flight.
"""

from __future__ import annotations

import argparse
import json
import logging
import selectors
import socket
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memstream.adapters import unix_socket
from memstream.adapters.embedding import model_process
from memstream.adapters.embedding.model_process import ModelSpec

log = logging.getLogger(__name__)

HEADER = struct.Struct(">II")  # length (of what follows it), request id
STATUS = struct.Struct(">B")
OK, FAILED = 0, 1
MAX_FRAME = 16 * 1024 * 1024  # a request of this many bytes is a broken client, not texts
BACKLOG = 64

# (texts, at most how many share a forward pass) -> float32 array, one row per text
Encode = Callable[[list[str], int], Any]


def request_frame(request_id: int, texts: Sequence[str], *, alone: bool = False) -> bytes:
    """A request for the vectors of `texts`; `alone`: each text in a forward pass of its own."""
    asked: object = {"alone": list(texts)} if alone else list(texts)
    body = json.dumps(asked, ensure_ascii=False).encode("utf-8")
    return HEADER.pack(len(body) + 4, request_id) + body


def answer_frame(request_id: int, status: int, payload: bytes) -> bytes:
    return HEADER.pack(len(payload) + 5, request_id) + STATUS.pack(status) + payload


def split_frames(buffer: bytearray) -> list[tuple[int, bytes]]:
    """The complete frames at the start of `buffer` as (id, body), removed from it."""
    frames = []
    while len(buffer) >= HEADER.size:
        length, request_id = HEADER.unpack_from(buffer)
        if length < 4 or length > MAX_FRAME:
            raise ValueError(f"a frame of {length} bytes")
        end = 4 + length
        if len(buffer) < end:
            break
        frames.append((request_id, bytes(buffer[HEADER.size : end])))
        del buffer[:end]
    return frames


@dataclass
class _Request:
    connection: socket.socket
    request_id: int
    texts: list[str] | None  # None: the request could not be read
    error: str = ""
    alone: bool = False  # each text in a forward pass of its own


class ModelServer:
    """The loop around `encode` (see the module doc); `serve_forever` until the process ends."""

    def __init__(self, listener: socket.socket, encode: Encode, max_texts: int) -> None:
        self._listener = listener
        self._encode = encode
        self._max_texts = max_texts
        self._selector = selectors.DefaultSelector()
        self._selector.register(listener, selectors.EVENT_READ)
        self._buffers: dict[socket.socket, bytearray] = {}

    def serve_forever(self) -> None:
        while True:
            self.serve_once()

    def serve_once(self, timeout: float | None = None) -> int:
        """Wait for requests (at most `timeout`), answer all that came; how many."""
        requests = self._read(self._selector.select(timeout))
        if requests:
            self._answer(requests)
        return len(requests)

    def _read(self, ready: list[tuple[selectors.SelectorKey, int]]) -> list[_Request]:
        requests: list[_Request] = []
        for key, _ in ready:
            sock: socket.socket = key.fileobj  # type: ignore[assignment]
            if sock is self._listener:
                connection, _ = sock.accept()
                self._buffers[connection] = bytearray()
                self._selector.register(connection, selectors.EVENT_READ)
                continue
            data = sock.recv(1 << 20)
            if not data:
                self._close(sock)
                continue
            buffer = self._buffers[sock]
            buffer += data
            try:
                frames = split_frames(buffer)
            except ValueError as exc:
                log.warning("model server: closing a connection that sent %s", exc)
                self._close(sock)
                continue
            requests += [_parse(sock, request_id, body) for request_id, body in frames]
        return requests

    def _answer(self, requests: list[_Request]) -> None:
        readable = [r for r in requests if r.texts is not None]
        try:
            vectors = self._vectors(readable)
        except Exception as exc:  # every request of the pass gets the error
            log.exception("model server: a pass failed")
            for r in readable:
                r.texts, r.error = None, f"{type(exc).__name__}: {exc}"
        for r in requests:
            if r.texts is None:
                frame = answer_frame(r.request_id, FAILED, r.error.encode("utf-8"))
            else:
                payload = np.ascontiguousarray(vectors[id(r)], dtype=np.float32).tobytes()
                frame = answer_frame(r.request_id, OK, payload)
            self._send(r.connection, frame)

    def _vectors(self, requests: list[_Request]) -> dict[int, Any]:
        """Each request's vectors by its `id`: the shared ones' texts in pieces of
        `max_texts`, in the order they came; those asked alone a pass a text."""
        shared = [(id(r), r.texts or []) for r in requests if not r.alone]
        texts = [t for _, asked in shared for t in asked]
        pieces = [
            self._encode(texts[i : i + self._max_texts], self._max_texts)
            for i in range(0, len(texts), self._max_texts)
        ]
        rows = np.concatenate(pieces) if pieces else np.zeros((0, 0), np.float32)
        vectors: dict[int, Any] = {}
        row = 0
        for key, asked in shared:
            vectors[key] = rows[row : row + len(asked)]
            row += len(asked)
        for r in requests:
            if r.alone:
                vectors[id(r)] = self._encode(r.texts, 1) if r.texts else rows[:0]
        return vectors

    def close(self) -> None:
        """Stop listening and close every connection (their clients see the server go)."""
        for connection in list(self._buffers):
            self._close(connection)
        self._selector.unregister(self._listener)
        self._listener.close()
        self._selector.close()

    def _send(self, connection: socket.socket, frame: bytes) -> None:
        if connection not in self._buffers:
            return  # it went away during the pass
        try:
            connection.sendall(frame)
        except OSError:
            self._close(connection)

    def _close(self, connection: socket.socket) -> None:
        if self._buffers.pop(connection, None) is not None:
            self._selector.unregister(connection)
        connection.close()


def _parse(connection: socket.socket, request_id: int, body: bytes) -> _Request:
    try:
        asked = json.loads(body)
        alone = isinstance(asked, dict) and set(asked) == {"alone"}
        texts = asked["alone"] if alone else asked
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise ValueError('a request is a JSON list of texts, or {"alone": [texts]}')
    except ValueError as exc:
        return _Request(connection, request_id, None, f"bad request: {exc}")
    return _Request(connection, request_id, texts, alone=alone)


def run(spec: ModelSpec, path: Path, max_texts: int) -> None:
    """Load and warm the model, then serve it at `path` until the process ends."""
    model_process.warm(spec, model_process.WARM_UP_TEXTS, max_texts)  # before the socket exists
    listener = unix_socket.listen(path, BACKLOG)
    server = ModelServer(
        listener, lambda texts, per_pass: model_process.encode(spec, texts, per_pass), max_texts
    )
    log.info("model server: %s (%s) ready at %s", spec.runtime, spec.path, path)
    server.serve_forever()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the local embedding model on a socket.")
    parser.add_argument("--socket", type=Path, required=True)
    parser.add_argument("--model", required=True, help="the model's directory")
    parser.add_argument("--runtime", required=True, choices=model_process.RUNTIMES)
    parser.add_argument("--cache-dir", default="")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper())
    model_process.configure_model_process(args.threads)  # before the runtime is imported
    spec = ModelSpec(
        path=args.model, runtime=args.runtime, threads=args.threads, cache_dir=args.cache_dir
    )
    run(spec, args.socket, args.batch_size)


if __name__ == "__main__":
    main()
