"""The recall HTTP API (FastAPI). Routes decode, call the pipeline or the service, encode.

    app = create_app(open_parts, settings=s)   # `open_parts()` yields the parts at startup

The composition root (`memstream.bootstrap.recall_app`) builds the parts and this app.

Authentication: `Authorization: Bearer <key>` against `settings.api.keys`, compared
in constant time. With no keys the app refuses to be built, unless
`settings.api.auth_disabled` says so (the embedded stack on loopback), and then it warns.
`/healthz`, `/readyz` and `/metrics` are always open, for probes and scrapers. Unknown
users get empty answers, never an error.

Before any route runs, `edges.http.gate.RequestGate` refuses oversize bodies (413) and
missing keys (401) without reading the body; validation errors (`edges.http.errors`) name
the field without echoing it. Any input gets a 4xx, never a 5xx.
"""

# No `from __future__ import annotations` here: FastAPI reads the route annotations at
# definition time, and the recall body's model is built per app (its limits are settings).

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Path, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse
from redis.exceptions import RedisError

from memstream.domain.models import Level
from memstream.edges.http.audit import AuditedOperations, AuditTrail
from memstream.edges.http.errors import install_validation_errors, safe_text
from memstream.edges.http.feed_routes import feed_routes
from memstream.edges.http.gate import CALLER_STATE, KeyRing, RequestGate
from memstream.edges.http.knowledge_routes import knowledge_routes
from memstream.edges.http.parts import (
    Parts,
    PartsOpener,
    RecallParts,
    UserIdPath,
    UserIdQuery,
)
from memstream.edges.http.recall_route import RecallObserver, RecallShortcut, recall_answer
from memstream.edges.http.repair_routes import repair_routes
from memstream.edges.http.schemas import (
    DateTime,
    ForgetMessagesRequest,
    ForgetResponse,
    Health,
    Memory,
    MemoryDetailResponse,
    MemoryPage,
    MessageForgetResponse,
    MessageForgetStatus,
    Problem,
    ProfileResponse,
    Readiness,
    RebuildRequest,
    RebuildResponse,
    RebuildStatus,
    RecallRequestBase,
    RecallResponse,
    Text,
    recall_request_model,
)
from memstream.edges.http.tenancy import (
    Tenancy,
    WithinReach,
    audited_key_reads,
    refuse_unreachable,
    within_reach,
)
from memstream.edges.http.turn_key_routes import turn_key_routes
from memstream.edges.http.ui import UiHeaders, ui_router
from memstream.edges.http.user_routes import user_routes
from memstream.edges.http.writes import (
    FOREIGN_TOKEN,
    AfterQuery,
    after_query,
    not_found,
    seen,
    settle,
)
from memstream.edges.probes import store_ready
from memstream.metrics import MULTIPROCESS_DIR_VARIABLE, Metrics
from memstream.recall.service import ForgetNotPublished, InvalidCursor, NothingToRebuild
from memstream.settings import Settings

__all__ = ["PartsOpener", "RecallParts", "create_app", "exposition"]

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 2.0
# What a route answers 503 for: a memory store is unavailable.
STORE_ERRORS = (RedisError, ResponseHandlingException, UnexpectedResponse, ConnectionError)


async def known_query_parameters(request: Request) -> None:
    """Refuse query parameters the route does not declare (a typo such as `limt=5` would
    otherwise be ignored silently), as the spec's closed parameter lists say."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None:
        return
    known = set(_query_names(dependant))
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        raise HTTPException(
            status_code=422,
            detail=[
                {"type": "extra_forbidden", "loc": ["query", safe_text(name)], "msg": "unknown"}
                for name in unknown[:10]
            ],
        )


def _query_names(dependant: Any) -> Iterator[str]:
    for param in dependant.query_params:
        yield param.alias
    for sub in dependant.dependencies:
        yield from _query_names(sub)


def bearer_auth(keys: KeyRing) -> Callable[..., Awaitable[None]]:
    """A dependency accepting any of `keys` as a bearer token; open when `keys` is empty.

    The `RequestGate` has checked the key already, before reading the body; this check
    documents the scheme in the spec and holds if the router is served without the gate.
    """
    scheme = HTTPBearer(auto_error=False, description="An API key from MEMSTREAM_RECALL_API_KEYS.")

    async def check(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(scheme)],
    ) -> None:
        caller = keys.identify(credentials.credentials if credentials is not None else None)
        if caller is None:
            raise HTTPException(
                status_code=401,
                detail="missing or invalid API key",
                headers={"WWW-Authenticate": "Bearer"},
            )
        setattr(request.state, CALLER_STATE, caller)

    return check


def create_app(
    open_parts: PartsOpener,
    *,
    settings: Settings,
    registry: CollectorRegistry | None = None,
    observe: RecallObserver | None = None,
    metrics: Metrics | None = None,
) -> FastAPI:
    """The API over the parts `open_parts()` yields from startup to shutdown.

    `registry` is what `/metrics` exposes (the default registry if None). `observe` sees
    every recall result, e.g. to record per-stage latency in metrics. `metrics` counts key
    file reads and rate-limited requests.
    """
    metrics_registry = registry or REGISTRY
    # No keys and no explicit opt-out: refuse to start; nor with a key file that is refused.
    tenancy = Tenancy(settings, metrics)
    if tenancy.watcher is not None:
        tenancy.watcher.load()
    if tenancy.keys.open:
        log.warning(
            "AUTHENTICATION IS DISABLED (MEMSTREAM_RECALL_AUTH_DISABLED): anyone who reaches "
            "this API can read and delete every user's memories"
        )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with open_parts() as parts, audited_key_reads(tenancy, parts.audit):
            app.state.parts = parts
            yield

    app = FastAPI(
        title="memstream recall",
        version="1",
        description="Recall memories from a user's Temporal Memory Tree.",
        lifespan=lifespan,
        # FastAPI's own OpenTelemetry hooks are off: recall is traced by `edges.tracing` (one
        # SERVER span with a child per stage) and measured by Prometheus; left on, they
        # looked the providers up in the environment on every request.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    ring = tenancy.keys
    _store_errors(app)
    install_validation_errors(app)
    recall_body = recall_request_model(settings)
    app.include_router(_v1_router(settings, ring, observe, recall_body))
    app.include_router(_ops_router(settings, metrics_registry))
    app.include_router(ui_router())  # the memory explorer's pages (docs/explorer.md)
    # Innermost, inside the gate: well-formed recalls answered without FastAPI's layers.
    app.add_middleware(
        RecallShortcut,
        model=recall_body,
        parts=lambda: getattr(app.state, "parts", None),
        token_key=settings.api.write_token_key,
        observe=observe,
        unavailable=STORE_ERRORS,
    )
    app.add_middleware(
        RequestGate,
        max_body_bytes=settings.api.max_body_bytes,
        keys=ring,
        rate_limits=tenancy.rate_limits,
    )
    # Outside the gate: it sees the caller the gate identified and the route that answered.
    app.add_middleware(AuditedOperations, trail=lambda: _audit_trail(app))
    app.add_middleware(UiHeaders)
    app.state.settings = settings  # the server reads its connection limits from here
    app.state.tenancy = tenancy  # its key file's watcher, for tests
    return app


def _audit_trail(app: FastAPI) -> AuditTrail | None:
    parts = getattr(app.state, "parts", None)
    return parts.audit if parts is not None else None


def _store_errors(app: FastAPI) -> None:
    async def unavailable(request: Request, exc: Exception) -> JSONResponse:
        log.warning("store unavailable during %s %s: %r", request.method, request.url.path, exc)
        return JSONResponse({"detail": "a memory store is unavailable"}, status_code=503)

    for error in STORE_ERRORS:
        app.add_exception_handler(error, unavailable)


def _v1_router(
    settings: Settings,
    keys: KeyRing,
    observe: RecallObserver | None,
    recall_body: type[RecallRequestBase],
) -> APIRouter:
    token_key = settings.api.write_token_key
    router = APIRouter(
        prefix="/v1",
        # In this order: who the caller is, then whether the users it names are in reach.
        dependencies=[
            Depends(bearer_auth(keys)),
            Depends(within_reach),
            Depends(known_query_parameters),
        ],
        responses={
            401: {"model": Problem, "description": "Missing or invalid API key."},
            404: {"model": Problem, "description": "No such user (or not the key's tenant's)."},
            429: {"model": Problem, "description": "Over the tenant's rate: see Retry-After."},
            413: {"model": Problem, "description": "The request body is over the limit."},
            503: {"model": Problem, "description": "A memory store is unavailable."},
        },
    )
    # Reads that name writes (`after`): the wait's bound and the tokens' key.
    reads_after = after_query(settings.api.max_wait_ms, token_key)
    After = Annotated[AfterQuery, Depends(reads_after)]

    async def recall(body: RecallRequestBase, parts: Parts, caller: WithinReach) -> RecallResponse:
        """Memories that help answer `query`, for the agent's context (after the writes
        named in `after`, waiting for them at most `wait_ms`)."""
        refuse_unreachable(caller, body.user_id)
        writes = await settle(parts.writes, body.user_id, body.after, body.wait_ms, token_key)
        return await recall_answer(body, parts, writes, observe)

    # FastAPI validates against the annotation: swap in the subclass carrying this
    # deployment's limits (the type checker keeps seeing the base class).
    recall.__annotations__["body"] = recall_body
    router.post(
        "/recall",
        response_model=RecallResponse,
        responses={
            400: {"model": Problem, "description": "The body is not UTF-8 JSON."},
            **FOREIGN_TOKEN,
        },
        tags=["recall"],
    )(recall)

    @router.get(
        "/users/{user_id}/profile",
        response_model=ProfileResponse,
        responses=FOREIGN_TOKEN,
        tags=["memories"],
    )
    async def profile(user_id: UserIdPath, parts: Parts, reads: After) -> ProfileResponse:
        """The user's latest monthly profile (L5), or null (after the writes in `after`)."""
        writes = await reads.settle(parts.writes, user_id)
        node = await parts.service.profile(user_id)
        return ProfileResponse(
            user_id=user_id, profile=Memory.of(node) if node else None, **seen(writes)
        )

    @router.get(
        "/users/{user_id}/memories",
        response_model=MemoryPage,
        responses=FOREIGN_TOKEN,
        tags=["memories"],
    )
    async def memories(
        user_id: UserIdPath,
        parts: Parts,
        reads: After,
        level: Annotated[int | None, Query(ge=1, le=5, description="Only this level.")] = None,
        start: Annotated[DateTime | None, Query(description="t_end >= start.")] = None,
        end: Annotated[DateTime | None, Query(description="t_end <= end.")] = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        cursor: Annotated[Text | None, Query(max_length=200)] = None,
    ) -> MemoryPage:
        """A page of the user's memories, level by level, each level by end time (after the
        writes in `after`)."""
        writes = await reads.settle(parts.writes, user_id)
        try:
            page = await parts.service.list_memories(
                user_id,
                level=Level(level) if level is not None else None,
                start=start,
                end=end,
                limit=limit,
                cursor=cursor,
            )
        except InvalidCursor as exc:
            raise HTTPException(
                status_code=422,
                detail=[{"loc": ["query", "cursor"], "msg": str(exc), "type": "value_error"}],
            ) from exc
        return MemoryPage(
            user_id=user_id,
            items=[Memory.of(n) for n in page.items],
            next_cursor=page.next_cursor,
            **seen(writes),
        )

    @router.get(
        "/memories/{memory_id}",
        response_model=MemoryDetailResponse,
        responses={
            404: {"model": Problem, "description": "No such memory for this user."},
            **FOREIGN_TOKEN,
        },
        tags=["memories"],
    )
    async def memory(
        memory_id: Annotated[Text, Path(min_length=1, max_length=200)],
        user_id: UserIdQuery,
        parts: Parts,
        reads: After,
    ) -> MemoryDetailResponse:
        """One memory with its children and provenance (ancestors, source message ids), after
        the writes in `after`."""
        writes = await reads.settle(parts.writes, user_id)
        detail = await parts.service.memory(user_id, memory_id)
        if detail is None:
            raise HTTPException(status_code=404, detail=not_found("memory", writes))
        return MemoryDetailResponse(
            memory=Memory.of(detail.node, with_derivation=True),
            children=[Memory.of(c) for c in detail.children],
            ancestors=[Memory.of(a) for a in detail.ancestors],
            source_ids=list(detail.node.source_ids),
            **seen(writes),
        )

    @router.delete("/users/{user_id}", response_model=ForgetResponse, tags=["memories"])
    async def forget(user_id: UserIdPath, parts: Parts) -> ForgetResponse:
        """Forget the user everywhere and tell the workers to drop in-flight state."""
        try:
            report = await parts.service.forget(user_id)
        except ForgetNotPublished as exc:
            log.error("forget of %s: %s", user_id, exc, exc_info=exc.__cause__)
            raise HTTPException(status_code=503, detail=f"{exc}; retry the request") from exc
        return ForgetResponse(
            user_id=user_id,
            qdrant_points=report.qdrant_points,
            redis_keys=report.redis_keys,
            forget_event_published=report.event_published,
        )

    _message_routes(router)
    _rebuild_routes(router)
    knowledge_routes(router, reads_after)
    user_routes(router)
    repair_routes(router)
    feed_routes(router)
    turn_key_routes(router)
    return router


NOTHING_TO_REBUILD = (
    "the user has no memories: nothing to rebuild (a lost tree is repaired, not rebuilt: "
    "POST /v1/users/{user_id}/repair)"
)


def _rebuild_routes(router: APIRouter) -> None:
    """Re-deriving a user's tree: the request is published, the progress read from the
    stores (`recall.rebuilds`)."""
    rebuild_id_path = Path(
        min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._:-]+$", description="Rebuild id."
    )

    @router.post(
        "/users/{user_id}/rebuild",
        status_code=202,
        response_model=RebuildResponse,
        responses={
            400: {"model": Problem, "description": "The body is not UTF-8 JSON."},
            404: {"model": Problem, "description": "The user has no memories to rebuild."},
        },
        tags=["memories"],
    )
    async def rebuild(
        user_id: UserIdPath, parts: Parts, body: RebuildRequest | None = None
    ) -> RebuildResponse:
        """Re-derive the user's memories from the stored messages with the workers' current
        backend, prompts and embedder; nothing changes where nothing would."""
        request = body or RebuildRequest()
        try:
            rebuild_id = await parts.service.rebuild(user_id, request.from_date, request.levels)
        except NothingToRebuild as exc:
            raise HTTPException(status_code=404, detail=NOTHING_TO_REBUILD) from exc
        except Exception as exc:
            log.error("rebuild of %s: %s", user_id, exc, exc_info=exc)
            raise HTTPException(status_code=503, detail="not published; retry") from exc
        return RebuildResponse(
            user_id=user_id,
            rebuild_id=rebuild_id,
            status="pending",
            handle=f"/v1/users/{user_id}/rebuilds/{rebuild_id}",
        )

    @router.get(
        "/users/{user_id}/rebuilds/{rebuild_id}",
        response_model=RebuildStatus,
        tags=["memories"],
    )
    async def rebuild_status(
        user_id: UserIdPath, rebuild_id: Annotated[str, rebuild_id_path], parts: Parts
    ) -> RebuildStatus:
        """pending or done, with the leaves and windows counted."""
        progress = await parts.service.rebuild_progress(user_id, rebuild_id)
        return RebuildStatus(
            user_id=user_id,
            rebuild_id=rebuild_id,
            status=progress.status,
            leaves=progress.leaves,
            leaves_done=progress.leaves_done,
            leaves_rewritten=progress.leaves_rewritten,
            windows=progress.windows,
            windows_pending=progress.windows_pending,
        )


def _message_routes(router: APIRouter) -> None:
    """Forgetting single messages: the request is published, the status read from the stores."""
    message_id_path = Path(min_length=1, max_length=200, description="Event id of a turn.")

    async def publish(user_id: str, ids: list[str], parts: RecallParts) -> MessageForgetResponse:
        ids = list(dict.fromkeys(ids))
        try:
            await parts.service.forget_messages(user_id, ids)
        except Exception as exc:
            log.error("forget of messages of %s: %s", user_id, exc, exc_info=exc)
            raise HTTPException(status_code=503, detail="not published; retry") from exc
        handles = [f"/v1/users/{user_id}/messages/{quote(i, safe='')}/forget" for i in ids]
        return MessageForgetResponse(
            user_id=user_id, message_ids=ids, status="pending", handles=handles
        )

    @router.delete(
        "/users/{user_id}/messages/{message_id}",
        status_code=202,
        response_model=MessageForgetResponse,
        tags=["memories"],
    )
    async def forget_message(
        user_id: UserIdPath,
        message_id: Annotated[str, message_id_path],
        parts: Parts,
    ) -> MessageForgetResponse:
        """Forget one message everywhere; its memories are written again without it."""
        return await publish(user_id, [message_id], parts)

    @router.post(
        "/users/{user_id}/messages:forget",
        status_code=202,
        response_model=MessageForgetResponse,
        responses={400: {"model": Problem, "description": "The body is not UTF-8 JSON."}},
        tags=["memories"],
    )
    async def forget_messages(
        user_id: UserIdPath, body: ForgetMessagesRequest, parts: Parts
    ) -> MessageForgetResponse:
        """Forget several messages of a user at once."""
        return await publish(user_id, body.message_ids, parts)

    @router.get(
        "/users/{user_id}/messages/{message_id}/forget",
        response_model=MessageForgetStatus,
        tags=["memories"],
    )
    async def message_forget_status(
        user_id: UserIdPath,
        message_id: Annotated[str, message_id_path],
        parts: Parts,
    ) -> MessageForgetStatus:
        """pending or done: whether any memory of the user still cites the message."""
        done = await parts.service.message_forgotten(user_id, message_id)
        return MessageForgetStatus(
            user_id=user_id, message_id=message_id, status="done" if done else "pending"
        )


def exposition(registry: CollectorRegistry) -> bytes:
    """What `/metrics` answers: this process's registry, or, when `serve` runs several API
    processes on one port (`PROMETHEUS_MULTIPROC_DIR` set by its supervisor), the sum over
    all of them: a scrape reaches one process, and each must answer for the pod, or counters
    would jump between the processes' values and `rate()` would read the jumps as resets."""
    if not os.environ.get(MULTIPROCESS_DIR_VARIABLE):
        return generate_latest(registry)
    from prometheus_client import multiprocess

    pod = CollectorRegistry()
    multiprocess.MultiProcessCollector(pod)
    return generate_latest(pod)


def _ops_router(settings: Settings, registry: CollectorRegistry) -> APIRouter:
    # Probes and scrapers stay lenient: a scraper may add its own parameters.
    router = APIRouter(tags=["operations"])

    @router.get("/healthz", response_model=Health)
    async def healthz() -> Health:
        """The process is up."""
        return Health(status="ok")

    @router.get(
        "/readyz",
        response_model=Readiness,
        responses={503: {"model": Readiness, "description": "A store is unreachable."}},
    )
    async def readyz(parts: Parts) -> JSONResponse:
        """Redis and Qdrant answer memstream's commands (or `reasons` says why not)."""
        answers = {name: await _probe(check) for name, check in parts.checks.items()}
        checks = {name: answer is True for name, answer in answers.items()}
        reasons = {name: answer for name, answer in answers.items() if isinstance(answer, str)}
        ready = all(checks.values())
        body = Readiness(status="ok" if ready else "unavailable", checks=checks, reasons=reasons)
        return JSONResponse(body.model_dump(), status_code=200 if ready else 503)

    @router.get("/metrics", response_class=PlainTextResponse)
    async def metrics() -> PlainTextResponse:
        """Prometheus metrics."""
        return PlainTextResponse(exposition(registry), media_type=CONTENT_TYPE_LATEST)

    return router


async def _probe(check: Callable[[], Awaitable[bool]]) -> bool | str:
    try:
        return await asyncio.wait_for(store_ready(check), PROBE_TIMEOUT_S)
    except TimeoutError:
        return f"no answer within {PROBE_TIMEOUT_S} s"
