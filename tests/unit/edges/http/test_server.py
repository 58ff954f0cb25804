"""The API's listening socket: several worker processes may share one port."""

from __future__ import annotations

import socket

import pytest

from memstream.edges.http.server import listening_socket


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
