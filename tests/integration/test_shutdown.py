"""SIGTERM stops a worker and its children within the grace period, even with an agent stuck.

The worker runs as the container runs it (`memstream worker --role all`) against the test
stack, with the local embedder (its model runs in a child process) and an LLM endpoint that
accepts connections and never answers: the segmenter is stuck inside its first L1.
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import pytest

from memstream.adapters.kafka.producer import KafkaPublisher
from memstream.contracts.catalog import Catalog
from memstream.contracts.codec import encode_turn
from memstream.contracts.records import Outbound
from memstream.domain.models import Turn
from memstream.settings import Settings

from .test_observability import container_env, entry_command, free_port, poll, tail, wait_ready

pytestmark = [pytest.mark.integration, pytest.mark.hostile]

GRACE_S = 5.0


def children_of(pid: int) -> set[int]:
    """Every descendant of `pid` still running (zombies count as gone)."""
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = (task / "children").read_text().split()
            except OSError:
                continue
            for kid in map(int, kids):
                if kid not in found and alive(kid):
                    found.add(kid)
                    frontier.append(kid)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


async def test_sigterm_stops_a_stuck_worker_and_its_model_process_within_the_grace(
    settings: Settings, catalog: Catalog, tmp_path: Path
) -> None:
    asked = asyncio.Event()

    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        asked.set()
        await reader.read()  # hold the request open until the client goes away
        writer.close()

    silent_llm = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    llm_port = silent_llm.sockets[0].getsockname()[1]
    port = free_port()
    env = container_env(
        settings,
        tmp_path / "worker",
        MEMSTREAM_METRICS_PORT=str(port),
        MEMSTREAM_EMBEDDER="local",
        MEMSTREAM_LLM_BASE_URL=f"http://127.0.0.1:{llm_port}/v1",
        MEMSTREAM_LLM_TIMEOUT_S="600",
        MEMSTREAM_SHUTDOWN_GRACE_S=str(GRACE_S),
        MEMSTREAM_LOG_LEVEL="INFO",
    )
    log_path = tmp_path / "worker.log"
    publisher = KafkaPublisher.for_bootstrap(settings.broker.bootstrap)
    await publisher.start()
    try:
        with entry_command(["worker", "--role", "all"], env, log_path) as worker:
            await wait_ready(worker, port, log_path, "memstream_ingested_events_total")
            from datetime import UTC, datetime

            turn = Turn("e1", "ana", "s1", 0, "Ana", "other", "I moved to Lyon.", datetime.now(UTC))
            await publisher.publish([Outbound(catalog.turns.name, "ana", encode_turn(turn))])
            await asyncio.wait_for(asked.wait(), timeout=120)  # the segmenter is now stuck

            async def model_child() -> set[int] | None:
                return children_of(worker.pid) or None

            children = await poll(model_child, timeout_s=120, what="the model process")
            worker.send_signal(signal.SIGTERM)
            sent = time.monotonic()

            async def exited() -> int | None:
                return worker.poll()

            code = await poll(exited, timeout_s=GRACE_S + 20, what="the worker to exit")
            took = time.monotonic() - sent
            assert took < GRACE_S + 5, f"exit {code} after {took:.1f} s:\n{tail(log_path)}"

            async def children_gone() -> bool | None:
                return not any(alive(pid) for pid in children) or None

            await poll(children_gone, timeout_s=5, what="the worker's children to exit")
    finally:
        await publisher.stop()
        silent_llm.close()
