"""`memstream mcp`: the MCP server (stdio or streamable HTTP). Its modules load when it runs."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer


class Transport(StrEnum):
    STDIO = "stdio"
    HTTP = "http"


def mcp(
    transport: Annotated[Transport, typer.Option(help="stdio (one user) or streamable HTTP.")] = (
        Transport.STDIO
    ),
    user_id: Annotated[
        str, typer.Option(help="Serve this one user; required over stdio (see the rule below).")
    ] = "",
    api_url: Annotated[
        str | None, typer.Option(help="Recall API URL (default: MEMSTREAM_API_HOST/PORT).")
    ] = None,
    host: Annotated[str, typer.Option(help="HTTP bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port (the endpoint is /mcp).")] = 8765,
    idempotent: Annotated[
        bool, typer.Option(help="Idempotent Kafka producer (off for the embedded broker).")
    ] = True,
) -> None:
    """Serve recall, remember, profile and forget as MCP tools.

    Whose memories: --user-id fixes the user of every call; without it (HTTP only) each
    session's bearer key names its user (MEMSTREAM_MCP_USER_KEYS). Tools never take a user id.
    Over HTTP every session needs its key, with --user-id too.
    """
    import asyncio

    from memstream.edges.tracing import configure as configure_tracing
    from memstream.entrypoints.mcp_server import McpConfig, serve_http, serve_stdio
    from memstream.settings import Settings

    settings = Settings()
    api_host = "127.0.0.1" if settings.api.host in ("0.0.0.0", "::") else settings.api.host
    keys = settings.api.keys
    # Its own key first (a tenant's confines it to that tenant), else an operator key.
    api_key = settings.mcp.api_key or (keys[0] if keys else None)
    config = McpConfig(
        api_url=api_url or f"http://{api_host}:{settings.api.port}",
        api_key=api_key.get_secret_value() if api_key else None,
        kafka_bootstrap=settings.broker.bootstrap,
        topic_prefix=settings.broker.topic_prefix,
        user_id=user_id,
        user_keys={user: key.get_secret_value() for user, key in settings.mcp.user_keys.items()},
        idempotent=idempotent,
        write_token_key=(
            settings.api.write_token_key.get_secret_value()
            if settings.api.write_token_key
            else None
        ),
    )
    if not config.kafka_bootstrap:
        typer.echo("No broker configured: set MEMSTREAM_KAFKA_BOOTSTRAP.", err=True)
        raise typer.Exit(2)
    stop_tracing = configure_tracing(settings.observability.otlp_traces_endpoint, "memstream-mcp")
    try:
        if transport is Transport.STDIO:
            asyncio.run(serve_stdio(config))
        else:
            asyncio.run(serve_http(config, host, port))
    except ValueError as bad:
        typer.echo(str(bad), err=True)
        raise typer.Exit(2) from bad
    finally:
        if stop_tracing is not None:
            stop_tracing()
