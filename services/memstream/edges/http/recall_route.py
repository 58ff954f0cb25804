"""`POST /v1/recall`: the answer, and a short way to it for the requests that need nothing else.

`recall_answer` is what the route does once FastAPI has decoded the body and solved its
dependencies. `RecallShortcut` (ASGI middleware, inside the `RequestGate`) gives the same
answer to a well-formed request without FastAPI's routing over every route, its dependency
solving and its validation of the answer it just built: at hundreds of recalls a second
those layers cost the event loop more than the recall pipeline does (docs/read-your-writes.md,
"Figures"). It answers only what it answers exactly as the route: a body the model accepts as
it is, no query string, a caller the gate identified who reaches the user, write tokens that
verify. Anything else goes on, untouched, to the route, which answers it (errors included);
nothing has been read from a store by then.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import UTC, datetime
from typing import Any

from fastapi import HTTPException
from fastapi.exceptions import RequestValidationError
from pydantic import SecretStr, TypeAdapter, ValidationError

from memstream.domain.tenancy import Caller
from memstream.edges.http.fact_schema import Fact
from memstream.edges.http.gate import CALLER_STATE, replaying
from memstream.edges.http.parts import RecallParts
from memstream.edges.http.schemas import Memory, RecallRequestBase, RecallResponse
from memstream.edges.http.trace_schemas import RecallTrace
from memstream.edges.http.writes import positions, seen
from memstream.recall.pipeline import RecallRequest, RecallResult
from memstream.recall.writes import WriteStatus

log = logging.getLogger(__name__)

RecallObserver = Callable[[RecallResult], None]
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]

RECALL_PATH = "/v1/recall"
_JSON = b"application/json"
_ANSWER = TypeAdapter(RecallResponse)


async def recall_answer(
    body: RecallRequestBase,
    parts: RecallParts,
    writes: WriteStatus,
    observe: RecallObserver | None,
) -> RecallResponse:
    """The answer to `body`, once the writes it names are settled (`writes`)."""
    request = RecallRequest(
        user_id=body.user_id,
        query=body.query,
        query_time=body.query_time,
        complexity=body.complexity,
        max_tokens=body.max_tokens,
        explain=body.explain,
    )
    result = await parts.pipeline.recall(request)
    if observe is not None:
        observe(result)
    return RecallResponse(
        user_id=request.user_id,
        complexity=result.complexity,
        keywords=list(result.keywords),
        memories=[
            Memory.of(
                m.node,
                m.score,
                with_derivation=body.with_derivation,
                validity=m.validity,
                full_tokens=m.full_tokens,
            )
            for m in result.memories
        ],
        # Each fact's status as of the question's time: a change told to begin later is
        # planned then, and the version it will close still holds.
        facts=[Fact.of(f, body.query_time or datetime.now(UTC)) for f in result.facts],
        tokens=result.tokens,
        omitted_for_budget=result.omitted_for_budget,
        # With `after`, how long the read waited for the writes, beside recall's stages.
        timings_ms={**result.timings_ms, "after": writes.waited_ms}
        if body.after
        else result.timings_ms,
        degraded=result.degraded,
        trace=RecallTrace.of(result.trace) if result.trace is not None else None,
        **seen(writes),
    )


class RecallShortcut:
    """`app.add_middleware(RecallShortcut, model=..., parts=..., ...)`, before the gate (so
    that it runs inside it: the gate has read the body and identified the caller)."""

    def __init__(
        self,
        app: Asgi,
        *,
        model: type[RecallRequestBase],
        parts: Callable[[], RecallParts | None],
        token_key: SecretStr | None,
        observe: RecallObserver | None,
        unavailable: tuple[type[BaseException], ...],
    ) -> None:
        """`unavailable`: the store errors the app answers 503 for (as its handlers do)."""
        self._app = app
        self._model = model
        self._parts = parts
        self._key = token_key
        self._observe = observe
        self._unavailable = unavailable

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _plain_recall(scope):
            await self._app(scope, receive, send)
            return
        message = await receive()
        whole = message["type"] == "http.request" and not message.get("more_body", False)
        body = message.get("body", b"") if whole else None
        taken = self._taken(scope, body) if body is not None else None
        if taken is None:
            await self._app(scope, replaying(message, receive), send)
            return
        request, parts, found = taken
        try:
            writes = await parts.writes.wait(request.user_id, found, request.wait_ms / 1000)
            answer = await recall_answer(request, parts, writes, self._observe)
        except self._unavailable as error:
            log.warning("store unavailable during POST %s: %r", RECALL_PATH, error)
            await _respond(send, 503, b'{"detail":"a memory store is unavailable"}')
            return
        await _respond(send, 200, _ANSWER.dump_json(answer, by_alias=True))

    def _taken(
        self, scope: Scope, body: bytes
    ) -> tuple[RecallRequestBase, RecallParts, list[Any]] | None:
        """The request, the parts and the write positions, when this path answers it."""
        caller = (scope.get("state") or {}).get(CALLER_STATE)
        parts = self._parts()
        if not isinstance(caller, Caller) or parts is None:
            return None
        try:
            request = self._model.model_validate_json(body)
        except ValidationError:
            return None
        if not caller.reaches(request.user_id):
            return None
        try:
            topic = parts.writes.marked_topic(request.user_id)
            found = positions(request.user_id, request.after, self._key, "body", topic)
        except (HTTPException, RequestValidationError):
            return None
        return request, parts, found


def _plain_recall(scope: Scope) -> bool:
    if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != RECALL_PATH:
        return False
    if scope.get("query_string"):
        return False
    types = [v for k, v in scope["headers"] if k.lower() == b"content-type"]
    return len(types) == 1 and types[0].split(b";")[0].strip().lower() == _JSON


async def _respond(send: Send, status: int, payload: bytes) -> None:
    headers = [(b"content-length", str(len(payload)).encode()), (b"content-type", _JSON)]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
