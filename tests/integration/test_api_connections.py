"""The recall API's connections under real uvicorn and real sockets: slow clients are cut
off, and an error never costs the client its keep-alive connection (issue 15)."""

from __future__ import annotations

import contextlib
import http.client
import socket
import time
from collections.abc import Iterator

import pytest
from pydantic import SecretStr
from tests.unit.fakes import FakeTree, fake_container, sample_tree

from memstream.bootstrap import recall_app
from memstream.domain.models import MemoryNode
from memstream.edges.http.server import MAX_HEAD_BYTES, BackgroundServer
from memstream.settings import Settings

KEY = "connections-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
READ_TIMEOUT_S = 1.0
SLOW_CLIENTS = 50


class BrokenTree(FakeTree):
    """A tree whose profile lookup has a bug (not a store outage: that is a 503)."""

    async def profile(self, user_id: str) -> MemoryNode | None:
        if user_id == "bug":
            raise RuntimeError("a bug in the handler")
        return await super().profile(user_id)


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    settings = Settings(
        recall_api_keys=[SecretStr(KEY)],
        api_read_timeout_s=READ_TIMEOUT_S,
        api_keep_alive_timeout_s=5,
    )
    app = recall_app(fake_container(settings, BrokenTree(sample_tree("u1"))))
    with BackgroundServer(app) as running:
        yield running


def closed_within(sock: socket.socket, seconds: float, trickle: bytes = b"") -> float | None:
    """Seconds until the server closes `sock` while the client sends `trickle` every 0.1 s
    (nothing if empty); None if it is still open after `seconds`."""
    started = time.monotonic()
    sock.settimeout(0.1)
    while time.monotonic() - started < seconds:
        try:
            if sock.recv(1024) == b"":
                return time.monotonic() - started
        except TimeoutError:
            pass
        except ConnectionResetError:
            return time.monotonic() - started
        if trickle:
            try:
                sock.sendall(trickle)
            except (BrokenPipeError, ConnectionResetError):
                return time.monotonic() - started
    return None


def connect(server: BackgroundServer) -> socket.socket:
    return socket.create_connection((server.host, server.port), timeout=5)


def test_clients_trickling_headers_are_cut_off_at_the_read_timeout(
    server: BackgroundServer,
) -> None:
    socks = [connect(server) for _ in range(SLOW_CLIENTS)]
    try:
        for sock in socks:
            sock.sendall(b"GET /v1/users/u1/profile HTTP/1.1\r\nHost: x\r\n")
        # Each keeps sending a header line every 0.1 s and never ends the head.
        waited = [closed_within(s, READ_TIMEOUT_S + 3, trickle=b"X-Slow: 1\r\n") for s in socks]
    finally:
        for sock in socks:
            sock.close()
    assert None not in waited, f"{waited.count(None)} slow clients still connected"
    assert max(w for w in waited if w is not None) < READ_TIMEOUT_S + 3


def test_an_idle_connection_and_a_slow_body_are_cut_off(server: BackgroundServer) -> None:
    idle = connect(server)
    slow_body = connect(server)
    try:
        head = f"POST /v1/recall HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
        slow_body.sendall(f"{head}Content-Length: 1000\r\n\r\n{{".encode())
        assert closed_within(idle, READ_TIMEOUT_S + 3) is not None
        assert closed_within(slow_body, READ_TIMEOUT_S + 3, trickle=b" ") is not None
    finally:
        idle.close()
        slow_body.close()


def test_a_request_head_over_the_limit_is_refused_and_the_server_goes_on(
    server: BackgroundServer,
) -> None:
    # uvicorn takes httptools when it is installed (as it is with memstream), else h11.
    sock = connect(server)
    try:
        head = f"GET /v1/users/u1/profile HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
        # The server may answer and close before it has read all of this.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(head.encode() + b"X-Big: " + b"a" * (2 * MAX_HEAD_BYTES) + b"\r\n\r\n")
        answer = sock.recv(1024)
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 400")
    conn = http.client.HTTPConnection(server.host, server.port, timeout=5)
    try:
        conn.request("GET", "/v1/users/u1/profile", headers=AUTH)
        assert conn.getresponse().status == 200
    finally:
        conn.close()


def test_a_client_within_the_timeout_is_served_again_and_again(server: BackgroundServer) -> None:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=5)
    try:
        for _ in range(3):
            conn.request("GET", "/v1/users/u1/profile", headers=AUTH)
            reply = conn.getresponse()
            assert reply.status == 200 and reply.read()
            port = conn.sock.getsockname()[1]
        conn.request("GET", "/healthz")
        assert conn.getresponse().read() and conn.sock.getsockname()[1] == port
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("GET", "/v1/users/bug/profile", None, 500),  # a bug
        ("POST", "/v1/recall", '{"user_id": "u1", "query": "\\ud800"}', 422),
        ("POST", "/v1/recall", '{"user_id": "u1", "query": "q", "query_time": 0}', 422),
        ("POST", "/v1/recall", "x" * 100_000, 413),
        ("GET", "/v1/users/%2E%2E/profile", None, 422),
    ],
)
def test_after_an_error_the_same_connection_still_works(
    server: BackgroundServer, method: str, path: str, body: str | None, status: int
) -> None:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=5)
    try:
        headers = AUTH | {"Content-Type": "application/json"}
        conn.request(method, path, body=body, headers=headers)
        reply = conn.getresponse()
        assert reply.status == status
        reply.read()
        if status == 413:
            return  # the rest of an unread body is still on the wire: closing is right
        port = conn.sock.getsockname()[1]
        conn.request("GET", "/v1/users/u1/profile", headers=AUTH)
        again = conn.getresponse()
        assert again.status == 200 and again.read()
        assert conn.sock.getsockname()[1] == port, "the server closed the connection"
    finally:
        conn.close()
