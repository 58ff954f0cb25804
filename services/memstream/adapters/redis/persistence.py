"""Redis's files after a forget: the append-only file and the snapshot hold every command
and value Redis was given, the forgotten user's words included, until they are written anew.

`rewrite_persistence` has Redis write each file it keeps from what it holds now (which no
longer has the user): BGREWRITEAOF when `appendonly` is on, BGSAVE when `save` has rules. A
rewrite that began before the forget would still copy the user, so one already running is
waited out (polled, with a deadline) and a fresh one started after it. Redis replaces the
old files when the new ones are complete (with multi-part AOF, the old base and increments
are deleted then). A deployment that disables CONFIG or these commands gets a warning: its
operator rewrites the files (docs/forget-everywhere.md).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from memstream.adapters.redis.base import RedisBase, text
from memstream.adapters.redis.connection import SlotTransactions

log = logging.getLogger(__name__)

POLL_S = 0.05


@dataclass(frozen=True, slots=True)
class Rewrites:
    """Which of Redis's files a forget had rewritten (started after the forget)."""

    append_only: bool
    snapshot: bool


class RedisPersistence(RedisBase):
    async def rewrite_files(self, deadline_s: float = 60.0) -> Rewrites:
        """After a forget: Redis's files written anew from what it holds now."""
        if not isinstance(self._r, SlotTransactions):
            return await rewrite_persistence(self._r, deadline_s=deadline_s)
        # On a cluster every primary keeps files of its own: each is rewritten.
        done = [
            await rewrite_persistence(c, deadline_s=deadline_s) for c in await self._r.primaries()
        ]
        return Rewrites(
            append_only=all(r.append_only for r in done), snapshot=all(r.snapshot for r in done)
        )


async def rewrite_persistence(client: aioredis.Redis, *, deadline_s: float = 60.0) -> Rewrites:
    """Start a rewrite of each file Redis keeps, from its data as it is now."""
    try:
        config = await client.config_get("appendonly")
        config.update(await client.config_get("save"))
    except ResponseError as exc:
        log.warning(
            "Redis refuses CONFIG GET (%s): its files are not rewritten after a forget", exc
        )
        return Rewrites(False, False)
    values = {text(k): text(v) for k, v in config.items()}
    aof = values.get("appendonly") == "yes"
    rdb = bool(values.get("save", "").strip())
    end = time.monotonic() + deadline_s
    if aof:
        aof = await _start(client, "BGREWRITEAOF", "aof_rewrite_in_progress", end)
    if rdb:
        rdb = await _start(client, "BGSAVE", "rdb_bgsave_in_progress", end)
    return Rewrites(aof, rdb)


async def _start(client: aioredis.Redis, command: str, running: str, end: float) -> bool:
    """Start `command`, after waiting out a run of it already under way (which may have
    copied the data before the forget). False, with a warning, past the deadline."""
    while True:
        if not await _in_progress(client, running):
            try:
                await client.execute_command(command)
                return True
            except ResponseError as exc:
                if "in progress" not in str(exc) and "already" not in str(exc):
                    log.warning("Redis refused %s after a forget: %s", command, exc)
                    return False
        if time.monotonic() > end:
            log.warning("Redis was still busy with %s when the forget gave up waiting", command)
            return False
        await asyncio.sleep(POLL_S)


async def _in_progress(client: aioredis.Redis, field: str) -> bool:
    info: dict[str, Any] = await client.info("persistence")
    return bool(int(info.get(field, 0)))
