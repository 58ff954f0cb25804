"""`/metrics`, `/healthz` and `/readyz` for a process that has no recall API to serve them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
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

# A check answers yes or no, or yes or no per part (`{"segmenter": False, "redis": True}`):
# the probe is healthy when every part is, and its body says which part is not. A part may
# answer a reason instead of False (`{"redis": "crossslot: ..."}`): down, and why.
Status = bool | Mapping[str, bool | str]
LiveCheck = Callable[[], Status]
ReadyCheck = Callable[[], Awaitable[Status]]
READY_TIMEOUT_S = 5.0


async def store_ready(check: Callable[[], Awaitable[bool]]) -> bool | str:
    """A store's readiness check, a failure turned into its reason (what it raised)."""
    try:
        return bool(await check())
    except Exception as exc:
        return str(exc) or type(exc).__name__


def _answer(key: str, status: Status) -> web.Response:
    body: dict[str, object]
    if isinstance(status, bool):
        ok, body = status, {key: status}
    else:
        parts = {k: v is True for k, v in status.items()}
        ok = all(parts.values())
        body = {
            key: ok,
            "parts": parts,
            "down": sorted(k for k, v in parts.items() if not v),
        }
        reasons = {k: v for k, v in status.items() if isinstance(v, str)}
        if reasons:
            body["reasons"] = reasons
    return web.json_response(body, status=200 if ok else 503)


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
        return _answer("live", live())

    # A probe is polled on a timer: the first failure is logged with its traceback, repeats
    # only at DEBUG, and the recovery once, so a long outage is a few lines, not thousands.
    failing = False

    async def readyz(_: web.Request) -> web.Response:
        nonlocal failing
        status: Status
        try:
            status = await asyncio.wait_for(ready(), timeout=READY_TIMEOUT_S)
        except Exception:
            log.log(
                logging.DEBUG if failing else logging.WARNING,
                "readiness check failed",
                exc_info=True,
            )
            failing = True
            status = False
        else:
            if failing:
                log.info("readiness check answers again")
            failing = False
        return _answer("ready", status)

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
