"""What `memstream up` prints before `Ready.`: its `MEMSTREAM_*=value` endpoint lines."""

from __future__ import annotations

import asyncio


async def read_until_ready(proc: asyncio.subprocess.Process) -> dict[str, str]:
    """The endpoint lines a `memstream up` process printed up to `Ready.`; an exit first
    fails the test with what it had printed."""
    assert proc.stdout is not None
    printed: dict[str, str] = {}
    while True:
        line = (await proc.stdout.readline()).decode()
        if not line:
            raise AssertionError(f"memstream up exited early: {printed}")
        if line.startswith("Ready."):
            return printed
        key, sep, value = line.strip().partition("=")
        if sep and key.startswith("MEMSTREAM_"):
            printed[key] = value
