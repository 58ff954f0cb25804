"""The API's front door, an ASGI middleware: cheap refusals before any work, and failures
that never take the connection down with them.

In order, for every HTTP request:

1. a declared body (`Content-Length`) over `max_body_bytes` is refused with 413, unread;
2. a protected path (`/v1/...`) without a valid bearer key is refused with 401, its body
   unread (the route's own check stays, for the OpenAPI spec and for mounted apps); the
   caller the key names (`domain.tenancy.Caller`) goes into the scope's state; a tenant's
   request over its rate is refused with 429 and `Retry-After`; a path with an encoded "/"
   in a segment is refused with 422 (no id holds one);
3. the body is read up to `max_body_bytes` (chunked bodies too) and refused with 413 as soon
   as it goes over, so no request ever holds more than that in memory;
4. the app runs on the buffered body. An exception it lets out becomes a 500 answered here:
   uvicorn closes the connection when an app raises after its error page went out, so one
   bad request would otherwise reset the next one on the same keep-alive connection.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from memstream.domain.tenancy import Caller, KeyTable, operator_keys
from memstream.edges.http.rate_limits import TenantRateLimits

log = logging.getLogger(__name__)

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

PROTECTED_PREFIX = "/v1/"
CALLER_STATE = "caller"  # the request's scope state holds the Caller the key named
ANONYMOUS = Caller("anonymous")  # every request, while authentication is disabled


class KeyRing:
    """The API keys, as SHA-256 digests: the environment's list (operator keys) and the key
    file's operator and tenant keys, which `replace_file_keys` swaps while serving."""

    def __init__(self, keys: Sequence[str] = (), *, key_file: bool = False) -> None:
        self._environment = operator_keys(keys)
        self._table = self._environment
        # With a key file configured, authentication is on even while it lists no key.
        self._key_file = key_file

    @property
    def open(self) -> bool:
        """No keys and no key file: authentication is disabled."""
        return not self._table.callers and not self._key_file

    @property
    def table(self) -> KeyTable:
        return self._table

    def replace_file_keys(self, file_keys: KeyTable) -> None:
        """Serve `file_keys` beside the environment's; KeyFileError (nothing changes) when
        a key of the file is one of the environment's."""
        self._table = self._environment.merged(file_keys)

    def identify(self, token: str | None) -> Caller | None:
        """Who `token` is, None for no key or an unknown one (an operator when open)."""
        if self.open:
            return ANONYMOUS
        return self._table.identify(token)

    def identify_header(self, authorization: str | None) -> Caller | None:
        """`Authorization: Bearer <key>` (the scheme in any case, as RFC 7235 allows)."""
        scheme, _, token = (authorization or "").partition(" ")
        return self.identify(token.strip() if scheme.lower() == "bearer" else None)

    def accepts(self, token: str | None) -> bool:
        return self.identify(token) is not None

    def accepts_header(self, authorization: str | None) -> bool:
        return self.identify_header(authorization) is not None


class RequestGate:
    """`app.add_middleware(RequestGate, max_body_bytes=65536, keys=KeyRing([...]))`."""

    def __init__(
        self,
        app: Asgi,
        *,
        max_body_bytes: int,
        keys: KeyRing,
        rate_limits: TenantRateLimits | None = None,
    ) -> None:
        self._app = app
        self._max_body = max_body_bytes
        self._keys = keys
        self._rate_limits = rate_limits

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = _headers(scope)
        declared = _content_length(headers.get("content-length"))
        if declared is not None and declared > self._max_body:
            await _problem(send, 413, self._too_large())
            return
        if scope["path"].startswith(PROTECTED_PREFIX):
            caller = self._keys.identify_header(headers.get("authorization"))
            if caller is None:
                await _problem(
                    send, 401, "missing or invalid API key", [(b"www-authenticate", b"Bearer")]
                )
                return
            scope.setdefault("state", {})[CALLER_STATE] = caller
            wait_s = self._rate_limits.wait_s(caller) if self._rate_limits else 0.0
            if wait_s > 0:
                retry_after = str(max(1, math.ceil(wait_s))).encode()
                await _problem(
                    send, 429, "over this tenant's request rate", [(b"retry-after", retry_after)]
                )
                return
        if _encoded_slash(scope):
            await _unprocessable(send, "a path segment cannot hold '/' (%2F)")
            return
        body = await self._read_body(receive)
        if body is None:
            await _problem(send, 413, self._too_large())
            return
        await self._run_guarded(
            scope,
            replaying({"type": "http.request", "body": body, "more_body": False}, receive),
            send,
        )

    async def _read_body(self, receive: Receive) -> bytes | None:
        """The whole body, or None as soon as it exceeds the limit."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client went away: the app sees an empty body, then the same
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self._max_body:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    async def _run_guarded(
        self, scope: MutableMapping[str, Any], receive: Receive, send: Send
    ) -> None:
        state = {"started": False, "complete": False}

        async def tracking_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["started"] = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                state["complete"] = True
            await send(message)

        try:
            await self._app(scope, receive, tracking_send)
        except Exception:
            log.exception("unhandled error in %s %s", scope.get("method"), scope.get("path"))
            if not state["started"]:
                await _problem(send, 500, "internal error")
            elif not state["complete"]:
                raise  # half a response went out: only closing the connection ends it

    def _too_large(self) -> str:
        return f"request body over {self._max_body} bytes"


def _headers(scope: MutableMapping[str, Any]) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def _content_length(value: str | None) -> int | None:
    # The HTTP parser has refused a malformed Content-Length already.
    return int(value) if value is not None and value.strip().isdigit() else None


def _encoded_slash(scope: MutableMapping[str, Any]) -> bool:
    # The server decodes %2F before routing, so `/v1/users/a%2Fb/profile` would be read as
    # another route (404, 405) instead of a refused user id. No id or memory id has a "/".
    raw = scope.get("raw_path") or b""
    return b"%2f" in raw.lower()


async def _unprocessable(send: Send, message: str) -> None:
    detail = [{"type": "value_error", "loc": ["path"], "msg": message}]
    await _respond(send, 422, {"detail": detail})


def replaying(message: Message, receive: Receive) -> Receive:
    """A `receive` that hands `message` (a body already read) over once, then waits on the
    real one (which reports the disconnect)."""
    delivered = False

    async def replay() -> Message:
        nonlocal delivered
        if delivered:
            return await receive()
        delivered = True
        return message

    return replay


async def _problem(
    send: Send, status: int, detail: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    await _respond(send, status, {"detail": detail}, extra)


async def _respond(
    send: Send, status: int, body: object, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    payload = json.dumps(body).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
