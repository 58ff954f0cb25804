"""A benchmark's sender in a process of its own, as the producers of a deployment are
(the ingest benchmark's `--publisher process`, the fairness benchmark's `--flood-process`).

The child reads and connects first, says `ready`, waits for `go` on stdin (the benchmark
starts its clock then), sends, and prints how many records it sent and the CPU seconds that
took: it has exited by the time the benchmark takes its CPU figures, so it reports its own.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

Sent = tuple[int, float]  # records sent, CPU seconds the sender's process spent sending them


@asynccontextmanager
async def sender_process(
    name: str, module: str, *arguments: str
) -> AsyncIterator[Callable[[], Awaitable[Sent]]]:
    """`python -m module arguments`, started and ready on entry; the call says `go` and
    returns what it sent. Killed on exit if still running; `name` names it in errors."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        *arguments,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None
    stdin, stdout = child.stdin, child.stdout

    async def send() -> Sent:
        stdin.write(b"go\n")
        await stdin.drain()
        line = await stdout.readline()
        if await child.wait() != 0 or not line:
            raise RuntimeError(f"{name} exited with {child.returncode}")
        count, cpu_seconds = line.split()
        return int(count), float(cpu_seconds)

    try:
        if await stdout.readline() != b"ready\n":
            raise RuntimeError(f"{name} did not start")
        yield send
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()


async def send_when_told(send: Callable[[], Awaitable[int]]) -> Sent:
    """The child's side, once it has read and connected: `ready`, wait for `go`, then
    `send`, timing its own CPU."""
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    cpu_before = time.process_time()
    count = await send()
    return count, time.process_time() - cpu_before


def report(sent: Sent) -> None:
    """The child's last line: what it sent, for `sender_process`'s call."""
    count, cpu_seconds = sent
    print(count, cpu_seconds, flush=True)
