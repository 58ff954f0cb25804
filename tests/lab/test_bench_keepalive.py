"""The recall load benchmark's HTTP client, against uvicorn serving a real app on loopback."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fastapi import FastAPI, Request

from memstream.edges.http.server import BackgroundServer
from memstream_lab.bench.keepalive import KeepAliveConnection


def echo_app() -> FastAPI:
    app = FastAPI()
    peers: list[Any] = []

    @app.post("/echo")
    async def echo(request: Request) -> dict[str, Any]:
        peers.append(request.client)
        return {"got": await request.json(), "connections": len(set(peers))}

    @app.post("/missing-field")
    async def missing(payload: dict[str, int]) -> dict[str, int]:
        return payload

    return app


def test_posts_many_bodies_on_one_connection() -> None:
    async def ask(port: int) -> list[tuple[int, dict[str, Any]]]:
        connection = KeepAliveConnection("127.0.0.1", port)
        try:
            answers = []
            for n in range(3):
                body = json.dumps({"n": n, "text": "é" * n}).encode()
                status, answer = await connection.post("/echo", body)
                answers.append((status, json.loads(answer)))
            return answers
        finally:
            await connection.close()

    with BackgroundServer(echo_app()) as server:
        answers = asyncio.run(ask(server.port))
    assert [status for status, _ in answers] == [200, 200, 200]
    assert [a["got"] for _, a in answers] == [{"n": n, "text": "é" * n} for n in range(3)]
    assert answers[-1][1]["connections"] == 1  # kept alive: one client address throughout


def test_an_error_status_comes_back_with_its_body() -> None:
    async def ask(port: int) -> tuple[int, bytes]:
        connection = KeepAliveConnection("127.0.0.1", port)
        try:
            return await connection.post("/missing-field", b'{"a": "not a number"}')
        finally:
            await connection.close()

    with BackgroundServer(echo_app()) as server:
        status, answer = asyncio.run(ask(server.port))
    assert status == 422
    assert "detail" in json.loads(answer)


def test_no_server_is_a_connection_error_every_time() -> None:
    async def ask(port: int) -> None:
        connection = KeepAliveConnection("127.0.0.1", port)
        for _ in range(2):  # a failed connection is dropped, and the next post tries anew
            with pytest.raises(ConnectionError):
                await connection.post("/echo", b"{}")
        await connection.close()

    with BackgroundServer(echo_app()) as gone:
        port = gone.port
    asyncio.run(ask(port))


async def _answer_once_then_close(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """A server that keeps no connection alive after its first answer, without saying so:
    what an idle timeout does to a kept-alive connection."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    body = await reader.readexactly(length)
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    await writer.drain()
    writer.close()


def test_a_reused_connection_the_server_closed_is_sent_again_on_a_new_one() -> None:
    async def ask() -> list[tuple[int, bytes]]:
        server = await asyncio.start_server(_answer_once_then_close, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        connection = KeepAliveConnection("127.0.0.1", port)
        try:
            return [await connection.post("/echo", b'{"n": %d}' % n) for n in range(3)]
        finally:
            await connection.close()
            server.close()
            await server.wait_closed()

    assert asyncio.run(ask()) == [(200, b'{"n": %d}' % n) for n in range(3)]
