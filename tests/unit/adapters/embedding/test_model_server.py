"""The model server and its client over a real Unix socket, with a stand-in for the model
(the real model behind it: `test_local_embedder.py`)."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memstream.adapters.embedding.model_client import ModelServerClient, ModelServerError
from memstream.adapters.embedding.model_server import (
    HEADER,
    ModelServer,
    answer_frame,
    request_frame,
    split_frames,
)
from memstream.adapters.unix_socket import listen

DIM = 4


class StandIn:
    """Vectors that say which text they are for: [length, first letter, 0, 0]; "boom" fails."""

    def __init__(self) -> None:
        self.passes: list[list[str]] = []

    def __call__(self, texts: list[str], per_pass: int) -> np.ndarray:
        self.passes += [texts[i : i + per_pass] for i in range(0, len(texts), per_pass)]
        if "boom" in texts:
            raise RuntimeError("the model broke")
        return np.array([[len(t), ord(t[0]), 0, 0] for t in texts], dtype=np.float32)


def vector_of(text: str) -> list[float]:
    return [float(len(text)), float(ord(text[0])), 0.0, 0.0]


class Running:
    """A `ModelServer` on a thread of its own, serving until stopped."""

    def __init__(self, path: Path, encode: StandIn, max_texts: int) -> None:
        self.listener = listen(path, 64)
        self.server = ModelServer(self.listener, encode, max_texts)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            self.server.serve_once(timeout=0.05)

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=10)
        self.server.close()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "model.sock"


@pytest.fixture
def stand_in() -> StandIn:
    return StandIn()


@pytest.fixture
def running(path: Path, stand_in: StandIn) -> Iterator[Running]:
    server = Running(path, stand_in, max_texts=3)
    yield server
    server.stop()


def test_frames_are_split_as_they_complete() -> None:
    first, second = request_frame(7, ["a", "bé"]), answer_frame(9, 0, b"\x01\x02")
    buffer = bytearray(first + second[:5])

    assert split_frames(buffer) == [(7, first[HEADER.size :])]
    assert buffer == bytearray(second[:5])  # the rest waits for its bytes
    buffer += second[5:]
    assert split_frames(buffer) == [(9, second[HEADER.size :])]
    assert buffer == bytearray()


def test_a_frame_of_absurd_length_is_refused() -> None:
    with pytest.raises(ValueError):
        split_frames(bytearray(HEADER.pack(1 << 30, 1)))


async def test_concurrent_requests_are_answered_each_with_its_own_vectors(
    running: Running, path: Path, stand_in: StandIn
) -> None:
    client = ModelServerClient(path, DIM)
    asks = [["alpha"], ["be", "gamma"], [], ["delta", "e", "zeta", "eta"], ["theta"]]

    answers = await asyncio.gather(*(client.encode(texts) for texts in asks))

    for texts, vectors in zip(asks, answers, strict=True):
        assert vectors.shape == (len(texts), DIM)
        assert vectors.tolist() == [vector_of(t) for t in texts]
    assert all(len(p) <= 3 for p in stand_in.passes)  # max_texts
    assert sorted(t for p in stand_in.passes for t in p) == sorted(t for a in asks for t in a)
    await client.close()


def served_together(path: Path, stand_in: StandIn, frames: list[bytes]) -> list[tuple[int, bytes]]:
    """`frames` sent at once to a server of passes of at most three, read by it together and
    answered: the answers, (id, body) in the order they came."""
    server = ModelServer(listen(path, 64), stand_in, max_texts=3)
    client = socket.socket(socket.AF_UNIX)
    client.connect(str(path))
    client.sendall(b"".join(frames))
    assert server.serve_once(timeout=5) == 0  # the connection is accepted
    assert server.serve_once(timeout=5) == len(frames)  # every request, read together
    buffer = bytearray()
    while len(answers := split_frames(bytearray(buffer))) < len(frames):
        buffer += client.recv(1 << 16)
    client.close()
    server.close()
    return answers


def assert_answered(answers: list[tuple[int, bytes]], asks: list[list[str]]) -> None:
    """Each answer holds the vectors of its request's texts, the requests in order."""
    assert [request_id for request_id, _ in answers] == list(range(len(asks)))
    for (_, body), texts in zip(answers, asks, strict=True):
        vectors = np.frombuffer(body[1:], dtype=np.float32).reshape(len(texts), DIM)
        assert body[0] == 0 and vectors.tolist() == [vector_of(t) for t in texts]


def test_requests_waiting_together_share_passes_and_are_answered_in_order(
    path: Path, stand_in: StandIn
) -> None:
    asks = [["alpha"], ["be", "gamma"], ["delta", "e", "zeta", "eta"], ["theta"]]

    answers = served_together(path, stand_in, [request_frame(n, t) for n, t in enumerate(asks)])

    # Their eight texts in passes of at most three, in the order they came.
    assert stand_in.passes == [["alpha", "be", "gamma"], ["delta", "e", "zeta"], ["eta", "theta"]]
    assert_answered(answers, asks)


def test_texts_asked_alone_share_no_pass_with_any_other_text(path: Path, stand_in: StandIn) -> None:
    asks = [["alpha"], ["be", "gamma"], ["delta"], []]
    alone = [False, True, False, True]
    frames = [
        request_frame(n, t, alone=a) for n, (t, a) in enumerate(zip(asks, alone, strict=True))
    ]

    answers = served_together(path, stand_in, frames)

    # The shared requests' texts together; each text asked alone in a pass of its own.
    assert stand_in.passes == [["alpha", "delta"], ["be"], ["gamma"]]
    assert_answered(answers, asks)


async def test_the_client_asks_for_texts_alone(
    running: Running, path: Path, stand_in: StandIn
) -> None:
    client = ModelServerClient(path, DIM)

    vectors = await client.encode(["one", "two", "three"], alone=True)

    assert vectors.tolist() == [vector_of(t) for t in ["one", "two", "three"]]
    assert stand_in.passes == [["one"], ["two"], ["three"]]
    await client.close()


def test_a_request_that_is_neither_texts_nor_texts_alone_is_refused(
    path: Path, stand_in: StandIn
) -> None:
    body = b'{"together": ["a"]}'

    [(request_id, answer)] = served_together(path, stand_in, [HEADER.pack(len(body) + 4, 0) + body])

    assert request_id == 0 and answer[0] == 1 and b"bad request" in answer
    assert stand_in.passes == []


async def test_a_failed_pass_fails_its_requests_and_the_next_pass_works(
    running: Running, path: Path
) -> None:
    client = ModelServerClient(path, DIM)

    with pytest.raises(ModelServerError, match="the model broke"):
        await client.encode(["boom"])
    assert (await client.encode(["after"])).tolist() == [vector_of("after")]
    await client.close()


async def test_a_broken_client_is_dropped_and_the_others_are_served(
    running: Running, path: Path
) -> None:
    broken = socket.socket(socket.AF_UNIX)
    broken.connect(str(path))
    broken.sendall(HEADER.pack(1 << 30, 1))  # no such frame
    client = ModelServerClient(path, DIM)

    assert (await client.encode(["fine"])).tolist() == [vector_of("fine")]
    assert await asyncio.to_thread(broken.recv, 16) == b""  # closed by the server
    broken.close()
    await client.close()


async def test_a_request_waits_for_a_server_still_loading_and_fails_when_it_goes(
    path: Path, stand_in: StandIn
) -> None:
    client = ModelServerClient(path, DIM, connect_timeout_s=30)
    asking = asyncio.ensure_future(client.encode(["early"]))
    await asyncio.sleep(0.3)  # the client polls for the socket meanwhile
    assert not asking.done()

    server = Running(path, stand_in, max_texts=3)  # its model is warm: it binds
    assert (await asking).tolist() == [vector_of("early")]
    server.stop()

    with pytest.raises(ConnectionError):
        await client.encode(["gone"])
    again = Running(path, stand_in, max_texts=3)
    assert (await client.encode(["back"])).tolist() == [vector_of("back")]  # reconnected
    again.stop()
    await client.close()


async def test_no_server_at_all_is_a_connection_error(path: Path) -> None:
    client = ModelServerClient(path, DIM, connect_timeout_s=0.3)
    with pytest.raises(ConnectionError, match="no model server"):
        await client.encode(["anyone?"])
