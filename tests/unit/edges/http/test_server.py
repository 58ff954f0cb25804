"""The API's listening socket (several worker processes may share one port) and its loop."""

from __future__ import annotations

import socket
import sys

import pytest

from memstream.edges.http.server import event_loop_factory, listening_socket


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
