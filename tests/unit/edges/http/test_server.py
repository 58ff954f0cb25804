"""The API's listening socket (several worker processes may share one port) and its loop."""

from __future__ import annotations

import asyncio
import socket
import sys

import pytest

from memstream.edges.http.server import HeldHead, event_loop_factory, listening_socket


def test_workers_share_a_port_only_when_they_all_ask_to() -> None:
    first = listening_socket("127.0.0.1", 0, reuse_port=True)
    port = first.getsockname()[1]
    try:
        first.listen()
        second = listening_socket("127.0.0.1", port, reuse_port=True)
        second.listen()
        second.close()
        with pytest.raises(OSError):
            listening_socket("127.0.0.1", port).listen()
    finally:
        first.close()


def test_the_socket_is_tcp_so_responses_are_not_held_back_by_nagle() -> None:
    with listening_socket("127.0.0.1", 0) as sock:
        assert sock.proto == socket.IPPROTO_TCP


def test_the_api_runs_on_uvloop_when_it_is_installed() -> None:
    uvloop = pytest.importorskip("uvloop")
    factory = event_loop_factory()
    assert factory is not None
    loop = factory()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()


def test_without_uvloop_the_api_keeps_asyncio_s_own_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # an import of it now fails
    assert event_loop_factory() is None


class Wire:
    """A transport that records what is written to it, each write apart."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> str:
        return f"the wire's {name}"


HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"


async def test_a_response_head_goes_out_with_its_body_in_one_write() -> None:
    wire = Wire()
    held = HeldHead(wire)
    held.write(HEAD)
    assert wire.writes == []
    held.write(b"{}")
    held.write(b"more")  # not a head: written at once
    assert wire.writes == [HEAD + b"{}", b"more"]
    assert held.get_extra_info("peername") == "the wire's peername"


async def test_a_head_alone_goes_out_on_the_loop_s_next_turn_or_when_closed() -> None:
    wire = Wire()
    held = HeldHead(wire)
    held.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    deadline = asyncio.get_running_loop().time() + 5
    while not wire.writes:
        assert asyncio.get_running_loop().time() < deadline, "the head was never written"
        await asyncio.sleep(0)
    assert wire.writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]
    held.write(HEAD)
    held.close()
    assert wire.writes[1:] == [HEAD] and wire.closed
