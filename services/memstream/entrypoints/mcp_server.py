"""memstream as an MCP server: an agent's tools to recall, remember, read the profile and
the facts, forget.

    memstream mcp --user-id ann                      # stdio, for one user (a desktop agent)
    memstream mcp --transport http --port 8765       # streamable HTTP, one user per API key

The server holds no memory itself: it asks the recall API over HTTP (`RecallClient`) and
publishes turns to Kafka (`MemstreamProducer`), like any other producer.

Whose memories a call touches, the rule: the user comes from the server's configuration
(`--user-id`: every call is that user's) or, over HTTP without one, from the key the client
authenticated its session with (`MEMSTREAM_MCP_USER_KEYS`, user id -> key). No tool takes a
user id as an argument: a model that reads a prompt injection cannot reach another user's
memories. Over stdio a user id is required (one process serves one user). Over HTTP every
request carries a key, whatever `--user-id` says: without keys the server refuses to start,
and with `--user-id` only that user's key is accepted. The server reaches the recall API
with its own key (`MEMSTREAM_MCP_API_KEY`, a tenant's key confines it to that tenant).
"""

from __future__ import annotations

import hmac
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Receive, Scope, Send

from memstream.client import (
    AsyncMemstreamProducer,
    AsyncRecallClient,
    InvalidEvent,
    Memory,
    RecallError,
    Receipt,
)
from memstream.client.prompt import fact_line

USER_SCOPE_KEY = "memstream_user"


@dataclass
class McpConfig:
    """What the MCP server connects to and whom it serves."""

    api_url: str
    api_key: str | None
    kafka_bootstrap: str
    topic_prefix: str = ""
    user_id: str = ""  # single-user mode when set
    user_keys: Mapping[str, str] = field(default_factory=dict)  # user id -> session key
    idempotent: bool = True
    write_token_key: str | None = None  # the API's MEMSTREAM_API_WRITE_TOKEN_KEY
    # One id for the life of the process, `seq` counting on: the segmenter makes each
    # conversation after an idle timeout a session of its own (`domain.incarnations`).
    session_id: str = field(default_factory=lambda: f"mcp-{uuid.uuid4().hex[:12]}")


class RecallOutput(BaseModel):
    context: str = Field(description="The memories as text to paste into the prompt.")
    memories: list[Memory]
    tokens: int
    complexity: str
    pending: bool = Field(
        default=False, description="A message remembered here may be missing from `context`."
    )
    pending_reason: str | None = None


class RememberOutput(BaseModel):
    event_id: str
    session_id: str
    seq: int
    write_token: str = Field(description="Where the message sits in the log (read-your-writes).")


class Backends:
    """The recall client and the producer, opened once for the server's lifetime."""

    def __init__(self, config: McpConfig) -> None:
        self.config = config
        self._stack = AsyncExitStack()
        self.recall: AsyncRecallClient | None = None
        self.producer: AsyncMemstreamProducer | None = None
        self._seq: dict[tuple[str, str], int] = {}
        # Per user, the receipt of the last message remembered: the next recall waits for
        # it, so a message remembered in this agent turn is recalled in the same turn.
        self.last_written: dict[str, Receipt] = {}

    async def __aenter__(self) -> Backends:
        cfg = self.config
        self.recall = await self._stack.enter_async_context(
            AsyncRecallClient(cfg.api_url, api_key=cfg.api_key)
        )
        producer = AsyncMemstreamProducer(
            cfg.kafka_bootstrap,
            topic_prefix=cfg.topic_prefix,
            idempotent=cfg.idempotent,
            write_token_key=cfg.write_token_key,
        )
        self.producer = await self._stack.enter_async_context(producer)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    def next_seq(self, user_id: str, session_id: str) -> int:
        key = (user_id, session_id)
        self._seq[key] = self._seq.get(key, -1) + 1
        return self._seq[key]


def user_of(ctx: Context[Any, Any], config: McpConfig) -> str:
    """The user of this call: the configured one, else the one the session's key belongs to."""
    if config.user_id:
        return config.user_id
    request = ctx.request_context.request
    scope = getattr(request, "scope", None) or {}
    user = scope.get("state", {}).get(USER_SCOPE_KEY)
    if not user:
        raise ToolError("no user for this session: configure --user-id or authenticate with a key")
    return str(user)


def build_server(backends: Backends) -> MCPServer:
    """The MCP server and its five tools over `backends` (opened by the caller)."""
    config = backends.config
    server = MCPServer(
        "memstream",
        instructions=(
            "Long-term memory of the user. Call `recall` with the user's message before "
            "answering and paste its context into your reasoning; call `remember` with each "
            "message of the conversation (the user's and yours) so it can be recalled later."
        ),
    )

    def clients() -> tuple[AsyncRecallClient, AsyncMemstreamProducer]:
        assert backends.recall is not None and backends.producer is not None, "not opened"
        return backends.recall, backends.producer

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def recall(
        query: str,
        ctx: Context[Any, Any],
        query_time: datetime | None = None,
        max_tokens: int | None = None,
    ) -> Annotated[CallToolResult, RecallOutput]:
        """What to remember for `query`: text for the prompt, and the memories behind it.

        `query_time`: when the question is asked (RFC 3339), for questions like "last week";
        `max_tokens`: the most the memories may take (a server default otherwise).
        """
        user = user_of(ctx, config)
        answer = await clients()[0].recall(
            user,
            query,
            query_time=query_time,
            max_tokens=max_tokens,
            after=backends.last_written.get(user),
        )
        text = answer.as_prompt() or "Nothing remembered about this yet."
        output = RecallOutput(
            context=text,
            memories=answer.memories,
            tokens=answer.tokens,
            complexity=answer.complexity,
            pending=answer.pending,
            pending_reason=answer.pending_reason,
        )
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=output.model_dump(mode="json"),
        )

    @server.tool()
    async def remember(
        text: str,
        ctx: Context[Any, Any],
        role: str = "user",
        speaker: str | None = None,
        session_id: str | None = None,
        ts: datetime | None = None,
        expires_at: datetime | None = None,
        flush: bool = False,
    ) -> RememberOutput:
        """Store one message of the conversation (role `user`, `assistant` or `other`).

        Messages of one `session_id` form one conversation (default: this server's session);
        `ts` defaults to now. With `expires_at`, memstream forgets the message at that time
        (a one-time code, a temporary address); one already past is stored nowhere. With
        `flush`, a user's message is written at once, not with the reply it awaits: a
        `recall` in this same turn then finds it.
        """
        user = user_of(ctx, config)
        session = session_id or config.session_id
        seq = backends.next_seq(user, session)
        producer = clients()[1]
        try:
            receipt = await producer.publish_turn(
                user_id=user,
                session_id=session,
                seq=seq,
                text=text,
                role=role,
                speaker=speaker,
                ts=ts,
                expires_at=expires_at,
                flush=flush,
            )
        except InvalidEvent as bad:
            raise ToolError(f"not stored: {bad}") from bad
        backends.last_written[user] = receipt
        return RememberOutput(
            event_id=receipt.event_id, session_id=session, seq=seq, write_token=receipt.token
        )

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def profile(ctx: Context[Any, Any]) -> str:
        """The user's latest monthly profile (who they are, what they care about), if any."""
        user = user_of(ctx, config)
        answer = await clients()[0].profile(user, after=backends.last_written.get(user))
        return answer.profile.text if answer.profile else "No profile yet."

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def facts(
        ctx: Context[Any, Any], subject: str | None = None, at: datetime | None = None
    ) -> str:
        """What is true about the user and the people, pets and places they talk about, one
        fact a line with since when it holds and what it replaced.

        `subject`: only facts about this one (a name such as "Maya", or "Maya's sister");
        `at`: what held at that time (RFC 3339) instead of now.
        """
        try:
            user = user_of(ctx, config)
            answer = await clients()[0].facts(
                user, subject=subject, at=at, after=backends.last_written.get(user)
            )
        except RecallError as error:
            if error.status == 501 or 400 <= error.status < 500:
                raise ToolError(f"no facts: {error.detail}") from error
            raise
        if answer is None:
            return f"Nothing is known about {subject}."
        if not answer.facts:
            return "No facts known yet."
        by_id = {f.fact_id: f for f in answer.facts}
        return "\n".join(
            fact_line(f, by_id.get(f.supersedes) if f.supersedes else None) for f in answer.facts
        )

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    async def forget(ctx: Context[Any, Any]) -> str:
        """Forget everything about the user, for good (their right to be forgotten)."""
        done = await clients()[0].forget_user(user_of(ctx, config))
        return f"Forgot {done.qdrant_points} memories of {done.user_id}."

    return server


class KeyAuth:
    """ASGI middleware: a bearer key per user; the user goes into the request's scope state."""

    def __init__(self, app: ASGIApp, user_keys: Mapping[str, str]) -> None:
        if not user_keys:
            raise ValueError("the MCP server over HTTP needs at least one key")
        self._app = app
        self._keys = [(user, key.encode()) for user, key in user_keys.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        given = headers.get(b"authorization", b"").removeprefix(b"Bearer ").strip()
        user = None
        for candidate, key in self._keys:  # every key compared: timing tells nothing
            if hmac.compare_digest(given, key):
                user = candidate
        if user is None:
            await _unauthorized(send)
            return
        scope.setdefault("state", {})[USER_SCOPE_KEY] = user
        await self._app(scope, receive, send)


async def _unauthorized(send: Send) -> None:
    body = b'{"detail":"missing or invalid key"}'
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
        }
    )
    await send({"type": "http.response.body", "body": body})


@asynccontextmanager
async def opened(config: McpConfig) -> AsyncIterator[tuple[MCPServer, Backends]]:
    async with Backends(config) as backends:
        yield build_server(backends), backends


def http_session_keys(config: McpConfig) -> Mapping[str, str]:
    """The keys HTTP sessions may authenticate with: every user's, or only `--user-id`'s.
    ValueError when that leaves none: over HTTP the server never serves without a key."""
    if not config.user_keys:
        raise ValueError(
            "over HTTP the MCP server serves only sessions with a key, even with --user-id: "
            "set MEMSTREAM_MCP_USER_KEYS (a JSON object, user id -> key)"
        )
    if not config.user_id:
        return config.user_keys
    if config.user_id not in config.user_keys:
        raise ValueError(
            f"--user-id {config.user_id!r} has no key in MEMSTREAM_MCP_USER_KEYS: over HTTP "
            "its sessions must authenticate with it"
        )
    return {config.user_id: config.user_keys[config.user_id]}


async def serve_stdio(config: McpConfig) -> None:
    if not config.user_id:
        raise ValueError("over stdio the MCP server serves one user: give --user-id")
    async with opened(config) as (server, _):
        await server.run_stdio_async()


async def serve_http(config: McpConfig, host: str, port: int) -> None:
    import uvicorn

    keys = http_session_keys(config)
    async with opened(config) as (server, _):
        app = KeyAuth(server.streamable_http_app(host=host), keys)
        uv = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
        await uv.serve()
