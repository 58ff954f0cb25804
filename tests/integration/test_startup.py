"""A worker's start: the model warms up while the consumer joins its group, on the real broker.

A restart is over when the worker consumes again; its two slowest steps, the model's load
and the group join, wait on different things (the model's process, the broker), so they run
side by side. The embedder here finishes its warm-up only once the group has handed the
process its partitions: run one after the other, the start could never finish.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path

import aiohttp
import pytest

from memstream.bootstrap import connect
from memstream.edges.startup import PREFIX
from memstream.entrypoints.api_workers import start_directory
from memstream.entrypoints.embedded.processes import free_port
from memstream.entrypoints.runner import Part, run_parts
from memstream.ports import Embedder
from memstream.settings import Settings

pytestmark = pytest.mark.integration

JOIN_DEADLINE_S = 60.0


class _SetOn(logging.Handler):
    """Sets `event` when a record's message contains `text`."""

    def __init__(self, text: str, event: asyncio.Event) -> None:
        super().__init__(logging.INFO)
        self._text = text
        self._event = event

    def emit(self, record: logging.LogRecord) -> None:
        if self._text in record.getMessage():
            self._event.set()


@pytest.fixture
def partitions_assigned() -> Iterator[asyncio.Event]:
    """Set when the process logs the start-up phase `partitions assigned`."""
    event = asyncio.Event()
    logger = logging.getLogger("memstream.edges.startup")
    handler = _SetOn(PREFIX + "partitions assigned", event)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield event
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@dataclasses.dataclass
class WarmsUpUntilJoined:
    """An embedder whose warm-up ends only once the consumer group has assigned partitions."""

    inner: Embedder
    joined: asyncio.Event
    warmed: bool = False

    @property
    def dim(self) -> int:
        return self.inner.dim

    async def warm_up(self) -> None:
        await asyncio.wait_for(self.joined.wait(), JOIN_DEADLINE_S)
        self.warmed = True

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return await self.inner.embed(texts)


async def test_the_model_warms_up_while_the_consumer_joins_its_group(
    settings: Settings, tmp_path: Path, partitions_assigned: asyncio.Event
) -> None:
    local = settings.model_copy(update={"data_dir": tmp_path})
    async with connect(local) as container:
        embedder = WarmsUpUntilJoined(container.embedder, partitions_assigned)
        warming = dataclasses.replace(container, embedder=embedder)
        async with run_parts(warming, {Part.SEGMENTER}, fast_rebalance=True) as running:
            assert embedder.warmed and running.joined.is_set()
            assert all((await running.ready()).values())


async def test_a_store_that_cannot_open_stops_the_consumer_that_started_first(
    settings: Settings, tmp_path: Path
) -> None:
    # The consumer starts joining before the connections; when they fail, the start must
    # end with their error, the consumer stopped, not hang on a join or leave it running.
    (tmp_path / "qdrant-edge").write_text("a file where the engine wants its directory")
    local = settings.model_copy(update={"data_dir": tmp_path})
    with pytest.raises(NotADirectoryError):
        async with asyncio.timeout(JOIN_DEADLINE_S):
            async with run_parts(local, {Part.SEGMENTER}, fast_rebalance=True):
                pass
    left = [t.get_name() for t in asyncio.all_tasks() if t.get_name() == "consumer-start"]
    assert left == []


@dataclasses.dataclass
class WarmsUpWhenReleased:
    """An embedder whose warm-up ends when the test says so."""

    inner: Embedder
    released: asyncio.Event

    @property
    def dim(self) -> int:
        return self.inner.dim

    async def warm_up(self) -> None:
        await asyncio.wait_for(self.released.wait(), JOIN_DEADLINE_S)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return await self.inner.embed(texts)


async def _refused(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return True
    writer.close()
    return False


async def test_an_api_process_opens_its_port_once_every_api_process_of_its_pod_is_warm(
    settings: Settings, tmp_path: Path
) -> None:
    # Two workers share the port; the first to listen answers /readyz for the pod. Here this
    # process is warm first and its sibling (a marker the test writes) later: the port must
    # stay closed until then, or every connection made meanwhile would stay on this one.
    port = free_port()
    local = settings.model_copy(
        update={
            "data_dir": tmp_path,
            "embedder": "hashing",
            "api_host": "127.0.0.1",
            "api_port": port,
            "recall_auth_disabled": True,
        }
    )
    local = local.model_copy(update={"api_start_together": start_directory(local, 2)})
    released, waiting, serving, stop = (asyncio.Event() for _ in range(4))
    logger = logging.getLogger("memstream.entrypoints.api_workers")
    handler = _SetOn("waiting for 1 more", waiting)
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        async with connect(local) as container:
            gated = dataclasses.replace(
                container, embedder=WarmsUpWhenReleased(container.embedder, released)
            )

            async def serve() -> None:
                async with run_parts(gated, {Part.API}, on_started=serving.set):
                    await stop.wait()

            task = asyncio.create_task(serve())
            try:
                assert await _refused(port)  # warming up
                released.set()
                await asyncio.wait_for(waiting.wait(), JOIN_DEADLINE_S)
                assert await _refused(port) and not serving.is_set()  # warm, the sibling not

                (local.handoff.api_start_together / "warm-1").touch()  # the sibling is warm
                await asyncio.wait_for(serving.wait(), JOIN_DEADLINE_S)
                async with (
                    aiohttp.ClientSession() as session,
                    session.get(f"http://127.0.0.1:{port}/readyz") as reply,
                ):
                    assert reply.status == 200
            finally:
                stop.set()
                await task
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
