"""`/metrics`, `/healthz` and `/readyz` for a process that has no recall API to serve them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

log = logging.getLogger(__name__)

LiveCheck = Callable[[], bool]
ReadyCheck = Callable[[], Awaitable[bool]]
READY_TIMEOUT_S = 5.0


def process_registry() -> CollectorRegistry:
    """A fresh registry with the process, platform and GC collectors of prometheus_client."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


async def _always_ready() -> bool:
    return True


@asynccontextmanager
async def serve_probes(
    registry: CollectorRegistry,
    port: int,
    *,
    host: str = "0.0.0.0",
    live: LiveCheck = lambda: True,
    ready: ReadyCheck = _always_ready,
) -> AsyncIterator[int]:
    """Serve `/metrics`, `/healthz` (liveness) and `/readyz` (readiness) on this loop.

    Yields the bound port (useful with `port=0`). A readiness check that raises or takes
    more than `READY_TIMEOUT_S` counts as not ready.
    """

    async def metrics(_: web.Request) -> web.Response:
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(_: web.Request) -> web.Response:
        ok = live()
        return web.json_response({"live": ok}, status=200 if ok else 503)

    async def readyz(_: web.Request) -> web.Response:
        try:
            ok = await asyncio.wait_for(ready(), timeout=READY_TIMEOUT_S)
        except Exception:
            log.warning("readiness check failed", exc_info=True)
            ok = False
        return web.json_response({"ready": ok}, status=200 if ok else 503)

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()
