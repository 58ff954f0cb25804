"""The wrappers around a write-path handler, each alone, then composed in their order."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from memstream.contracts.records import Consumed, RawEvent
from memstream.edges.handler_chain import (
    WritePathHandlers,
    consolidator_chain,
    dead_letter_when_ready,
    holding_background_off,
    segmenter_chain,
    when_ready,
)
from memstream.metrics import Metrics
from memstream.segmenter.handler import BatchReport

RAW = RawEvent(b"{}", "turns", 0, 7, None)
BATCH: list[Consumed[Any]] = [Consumed(object(), RAW)]


class Recorder:
    """A handler that notes each batch it gets, and what was open around it."""

    def __init__(self, calls: list[str] | None = None) -> None:
        self.batches: list[list[Consumed[Any]]] = []
        self.calls = calls if calls is not None else []

    async def __call__(self, batch: list[Consumed[Any]]) -> object:
        self.batches.append(batch)
        self.calls.append("handle")
        return "handled"


async def no_dead_letter(raw: RawEvent, reason: str, field_path: str | None = None) -> None:
    raise AssertionError("no dead letter expected")


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


async def test_when_ready_waits_for_the_handlers_then_hands_on_each_batch() -> None:
    handlers: asyncio.Future[WritePathHandlers] = asyncio.get_running_loop().create_future()
    inner = Recorder()
    handle = when_ready(handlers, lambda h: h.on_turns, "app")
    pending = asyncio.ensure_future(handle(BATCH))
    await asyncio.sleep(0)
    assert not pending.done() and inner.batches == []
    handlers.set_result(WritePathHandlers(inner, None, no_dead_letter))
    assert await pending == "handled"
    assert inner.batches == [BATCH]


async def test_when_ready_refuses_records_it_has_no_handler_for() -> None:
    handlers: asyncio.Future[WritePathHandlers] = asyncio.get_running_loop().create_future()
    handlers.set_result(WritePathHandlers(Recorder(), None, no_dead_letter))
    with pytest.raises(RuntimeError, match="app: no handler"):
        await when_ready(handlers, lambda h: h.on_windows, "app")(BATCH)


async def test_dead_letters_wait_for_the_handlers_then_go_through_theirs() -> None:
    handlers: asyncio.Future[WritePathHandlers] = asyncio.get_running_loop().create_future()
    sent: list[tuple[RawEvent, str, str | None]] = []

    async def dead_letter(raw: RawEvent, reason: str, field_path: str | None = None) -> None:
        sent.append((raw, reason, field_path))

    pending = asyncio.ensure_future(dead_letter_when_ready(handlers)(RAW, "bad", "ts"))
    await asyncio.sleep(0)
    assert sent == []
    handlers.set_result(WritePathHandlers(None, None, dead_letter))
    await pending
    assert sent == [(RAW, "bad", "ts")]


async def test_the_background_is_held_off_for_the_whole_batch() -> None:
    calls: list[str] = []

    @asynccontextmanager
    async def online() -> AsyncIterator[None]:
        calls.append("hold")
        yield
        calls.append("release")

    assert await holding_background_off(online, Recorder(calls))(BATCH) == "handled"
    assert calls == ["hold", "handle", "release"]


class FakeSegmenter:
    handled = 0

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    async def handle_batch(self, batch: list[Consumed[Any]]) -> BatchReport:
        self.calls.append("handle")
        return BatchReport(events=len(batch))


class FakeConsolidator:
    handled = 0

    async def handle_records(self, batch: list[Consumed[Any]]) -> list[object]:
        raise RuntimeError("qdrant is down")


async def test_the_segmenter_chain_measures_its_batches_inside_the_hold_off() -> None:
    metrics = Metrics(CollectorRegistry())
    calls: list[str] = []

    @asynccontextmanager
    async def online() -> AsyncIterator[None]:
        calls.append("hold")
        yield
        calls.append("release")

    handle = segmenter_chain(FakeSegmenter(calls), metrics, online=online)  # type: ignore[arg-type]
    report = await handle(BATCH)
    assert isinstance(report, BatchReport) and report.events == 1
    assert calls == ["hold", "handle", "release"]
    assert sample(metrics, "memstream_ingested_events_total", outcome="accepted") == 1
    assert sample(metrics, "memstream_segmenter_batch_seconds_count") == 1


async def test_the_consolidator_chain_counts_its_failures() -> None:
    metrics = Metrics(CollectorRegistry())
    handle = consolidator_chain(FakeConsolidator(), metrics)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="qdrant is down"):
        await handle(BATCH)
    assert sample(metrics, "memstream_handler_failures_total", handler="consolidator") == 1
