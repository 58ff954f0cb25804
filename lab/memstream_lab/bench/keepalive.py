"""A minimal HTTP/1.1 client for load generators: the benchmarks that offer load share it
(one benchmark never imports another)."""

from __future__ import annotations

import asyncio
import contextlib


class KeepAliveConnection:
    """One client's HTTP/1.1 connection to the API: it POSTs a JSON body and reads the
    answer by its Content-Length (uvicorn sends one with every JSON answer), reconnecting
    after an error. The load generator shares the two cores with the server it measures, so
    its own CPU per request should be as small as it can be; aiohttp's client builds a
    response object, header multidicts and timers for every request."""

    def __init__(self, host: str, port: int) -> None:
        self._address = (host, port)
        self._head = (
            f"POST {{path}} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        )
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        """The status and body of the answer; ConnectionError if there was none.

        A server closes a connection kept alive past its idle timeout, and the close can
        cross a request on the wire: that request fails before any answer, as if refused.
        So a post on a reused connection that gets no answer is sent once more on a new
        one, as HTTP clients do (the load generators' posts are reads)."""
        reused = self._streams is not None
        try:
            return await self._post_once(path, body)
        except ConnectionError:
            if not reused:
                raise
        return await self._post_once(path, body)

    async def _post_once(self, path: str, body: bytes) -> tuple[int, bytes]:
        try:
            if self._streams is None:
                self._streams = await asyncio.open_connection(*self._address)
            reader, writer = self._streams
            head = self._head.format(path=path)
            writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
            headers = await reader.readuntil(b"\r\n\r\n")
            status = int(headers[9:12])
            length = _content_length(headers)
            return status, await reader.readexactly(length)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as e:
            await self.close()
            raise ConnectionError(f"no answer from {self._address}: {e!r}") from e

    async def close(self) -> None:
        if self._streams is not None:
            writer = self._streams[1]
            self._streams = None
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


def _content_length(headers: bytes) -> int:
    for line in headers.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    raise ValueError("an answer without Content-Length")
