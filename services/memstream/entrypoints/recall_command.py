"""`memstream recall`: print what memstream remembers for a query.

The HTTP client, the stores and the rendering load inside the command (a fast `--help`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated, Literal

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from memstream.edges.http.schemas import RecallResponse
    from memstream.settings import Settings

ComplexityChoice = Literal["auto", "simple", "hybrid", "complex"]


def recall(
    user: Annotated[str, typer.Argument(help="The user whose memories to search.")],
    query: Annotated[str, typer.Argument(help="What the agent is being asked.")],
    complexity: Annotated[
        ComplexityChoice, typer.Option(help="Force the recall scope instead of planning it.")
    ] = "auto",
    max_tokens: Annotated[
        int | None, typer.Option(min=1, help="Token budget of the recalled memories.")
    ] = None,
    url: Annotated[
        str | None,
        typer.Option(
            envvar="MEMSTREAM_RECALL_URL",
            help="Base URL of a running recall API; without it the stores are opened directly.",
        ),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(envvar="MEMSTREAM_RECALL_API_KEY", help="Bearer key for --url."),
    ] = None,
) -> None:
    """Print the context memstream recalls for USER and QUERY, as a tree by level."""
    from rich.console import Console

    from memstream.settings import Settings

    console = Console(highlight=False)
    err = Console(stderr=True, highlight=False)
    body: dict[str, object] = {"user_id": user, "query": query, "complexity": complexity}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    try:
        if url:
            response = _recall_over_http(url, api_key, body)
        else:
            response = asyncio.run(_recall_direct(Settings(), body))
    except _Failed as exc:
        err.print(str(exc), style="red", markup=False)
        raise typer.Exit(1) from exc
    _print(console, response)


class _Failed(RuntimeError):
    """A failure to tell the person at the terminal about, without a traceback."""


def _recall_over_http(url: str, api_key: str | None, body: dict[str, object]) -> RecallResponse:
    import httpx

    from memstream.edges.http.schemas import RecallResponse

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        reply = httpx.post(url.rstrip("/") + "/v1/recall", json=body, headers=headers, timeout=30)
    except httpx.HTTPError as exc:
        raise _Failed(f"cannot reach the recall API at {url}: {exc}") from exc
    if reply.status_code != 200:
        raise _Failed(f"recall API answered {reply.status_code}: {reply.text}")
    return RecallResponse.model_validate(reply.json())


async def _recall_direct(settings: Settings, body: dict[str, object]) -> RecallResponse:
    """Open the configured stores in this process and run the pipeline once."""
    import httpx

    from memstream.bootstrap import recall_app
    from memstream.edges.http.schemas import RecallResponse

    if not settings.redis.url or not settings.broker.bootstrap:
        raise _Failed(
            "no stores configured: set MEMSTREAM_REDIS_URL and MEMSTREAM_KAFKA_BOOTSTRAP "
            "(as `memstream up` prints them), or pass --url of a running `memstream serve`."
        )
    # The same app as the server, in-process: one code path from request to rendering.
    app = recall_app(settings, producer=False)
    transport = httpx.ASGITransport(app=app)
    try:
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://memstream") as client,
        ):
            reply = await client.post("/v1/recall", json=body, headers=_local_auth(settings))
    except RuntimeError as exc:  # e.g. Qdrant's local files held by a running server
        raise _Failed(
            f"cannot open the stores: {exc}\n(if `memstream up` or `memstream serve` is running, "
            "pass --url or set MEMSTREAM_RECALL_URL to go through its API)"
        ) from exc
    if reply.status_code != 200:
        raise _Failed(f"recall failed ({reply.status_code}): {reply.text}")
    return RecallResponse.model_validate(reply.json())


def _local_auth(settings: Settings) -> dict[str, str]:
    # In-process, the configured key is at hand; use it so auth stays on the same path.
    keys = [k.get_secret_value() for k in settings.api.keys if k.get_secret_value()]
    return {"Authorization": f"Bearer {keys[0]}"} if keys else {}


def _print(console: Console, response: RecallResponse) -> None:
    from rich.text import Text

    from memstream.entrypoints.views import memory_lines

    header = Text.assemble(
        ("complexity ", "dim"),
        (response.complexity, "bold"),
        ("  keywords ", "dim"),
        (", ".join(response.keywords) or "-", "bold"),
        ("  tokens ", "dim"),
        (str(response.tokens), "bold"),
        ("  time ", "dim"),
        (f"{response.timings_ms.get('total', 0.0):.1f} ms", "bold"),
    )
    if response.degraded:
        header.append("  degraded (an LLM step fell back)", style="yellow")
    if response.omitted_for_budget:
        header.append(f"  {response.omitted_for_budget} left out for the budget", style="yellow")
    console.print(header)
    if not response.memories:
        console.print("nothing recalled", style="dim")
        return
    console.print(memory_lines([m.to_node() for m in response.memories]))
