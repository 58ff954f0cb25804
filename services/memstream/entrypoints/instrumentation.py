"""Glue between the running workers and `memstream.metrics`, plus the small HTTP server.

The handlers stay untouched: `InstrumentedSegmenter` and `InstrumentedConsolidator` wrap
them with the same call signature and turn their reports into metrics; `usage_hook` and
`fallback_hook` plug into the LLM backend (`instrument_runtime`); `recall_observer` and
`RecallMetricsMiddleware` instrument the recall API (`instrumented_recall_app`);
`BacklogCollector` polls what no handler sees (consumer lag, open windows); `serve_metrics`
exposes `/metrics`, `/healthz` and `/readyz` for the workers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web
from fastapi import FastAPI
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

from memstream.adapters.kafka.lag import consumer_lag
from memstream.adapters.llm.fallback import FallbackHook, build_language_model
from memstream.adapters.llm.openai import UsageHook
from memstream.bootstrap import Runtime, open_runtime
from memstream.consolidator.handler import Consolidator, Outcome
from memstream.contracts.records import Consumed
from memstream.domain.models import InputEvent, Level, WindowClosed
from memstream.entrypoints.http.api import create_app
from memstream.metrics import CONSOLIDATED_LEVELS, Metrics
from memstream.ports import TreeStore
from memstream.recall.pipeline import RecallResult
from memstream.segmenter.handler import BatchReport, Segmenter
from memstream.settings import Settings

log = logging.getLogger(__name__)


def process_registry() -> CollectorRegistry:
    """A fresh registry with the process, platform and GC collectors of prometheus_client."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


# --- handlers --------------------------------------------------------------------------


def observe_batch(metrics: Metrics, report: BatchReport, seconds: float) -> None:
    """Record what one segmenter batch did; `seconds` is how long `handle_batch` took.

    Records dead-lettered at decoding never reach the segmenter: the Faust edge counts them.
    """
    metrics.segmenter_batch.observe(seconds)
    metrics.ingested.labels("accepted").inc(max(0, report.events - report.duplicates))
    metrics.ingested.labels("duplicate").inc(report.duplicates)
    for latency in report.l1_latencies:
        metrics.l1_latency.observe(latency)
    for closure in report.closures:
        metrics.windows_closed.labels(closure.window.level.label, closure.reason).inc()


class InstrumentedSegmenter:
    """A `Segmenter` that records each batch's report and duration."""

    def __init__(
        self,
        segmenter: Segmenter,
        metrics: Metrics,
        *,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._segmenter = segmenter
        self._metrics = metrics
        self._clock = clock

    @property
    def handled(self) -> int:
        return self._segmenter.handled

    async def handle_batch(self, batch: Sequence[Consumed[InputEvent]]) -> BatchReport:
        started = self._clock()
        try:
            report = await self._segmenter.handle_batch(batch)
        except Exception:
            self._metrics.handler_failures.labels("segmenter").inc()
            raise
        observe_batch(self._metrics, report, self._clock() - started)
        return report


def observe_outcome(
    metrics: Metrics, closure: WindowClosed, outcome: Outcome, closed_at: float | None, now: float
) -> None:
    """Record one consolidation; the lag only when a node was written."""
    level = closure.window.level.label
    if outcome.node is None:
        metrics.consolidations.labels(level, "no_children").inc()
        return
    if outcome.skipped is not None:
        metrics.consolidations.labels(level, "unchanged").inc()
        return
    metrics.consolidations.labels(level, "written").inc()
    if closed_at is not None:
        metrics.consolidation_lag.labels(level).observe(max(0.0, now - closed_at))


class InstrumentedConsolidator:
    """A `Consolidator` that records each outcome and the lag since its window closed."""

    def __init__(
        self,
        consolidator: Consolidator,
        metrics: Metrics,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._consolidator = consolidator
        self._metrics = metrics
        self._clock = clock

    @property
    def handled(self) -> int:
        return self._consolidator.handled

    async def handle_records(self, batch: Sequence[Consumed[WindowClosed]]) -> list[Outcome]:
        """Each record's broker timestamp is when the segmenter closed its window."""
        try:
            outcomes = await self._consolidator.handle_records(batch)
        except Exception:
            self._metrics.handler_failures.labels("consolidator").inc()
            raise
        now = self._clock()
        for item, outcome in zip(batch, outcomes, strict=True):
            observe_outcome(self._metrics, outcome.closure, outcome, item.raw.timestamp, now)
        return outcomes


# --- LLM -------------------------------------------------------------------------------


def usage_hook(metrics: Metrics) -> UsageHook:
    """An `on_usage` callback for the OpenAI-compatible backend."""

    def record(
        operation: str,
        prompt_tokens: int,
        completion_tokens: int,
        seconds: float,
        error: str | None,
    ) -> None:
        metrics.llm_requests.labels(operation).inc()
        metrics.llm_latency.labels(operation).observe(seconds)
        metrics.llm_tokens.labels(operation, "prompt").inc(prompt_tokens)
        metrics.llm_tokens.labels(operation, "completion").inc(completion_tokens)
        if error is not None:
            metrics.llm_errors.labels(operation, error).inc()

    return record


def fallback_hook(metrics: Metrics) -> FallbackHook:
    """An `on_fallback` callback: counts calls the offline backend answered instead."""

    def record(operation: str, exc: BaseException) -> None:
        metrics.llm_fallbacks.labels(operation).inc()

    return record


# --- recall ----------------------------------------------------------------------------

RECALL_PATH = "/v1/recall"
_Asgi = Callable[..., Awaitable[None]]


def recall_observer(metrics: Metrics) -> Callable[[RecallResult], None]:
    """An `observe` callback for `recall.api.create_app`: per-stage durations."""

    def record(result: RecallResult) -> None:
        for stage, ms in result.timings_ms.items():
            if stage != "total":
                metrics.recall_stage_latency.labels(stage).observe(ms / 1000)

    return record


class RecallMetricsMiddleware:
    """ASGI middleware counting `POST /v1/recall` by status and timing it whole:
    `app.add_middleware(RecallMetricsMiddleware, metrics=metrics)`."""

    def __init__(self, app: _Asgi, metrics: Metrics) -> None:
        self._app = app
        self._metrics = metrics

    async def __call__(self, scope: dict[str, Any], receive: _Asgi, send: _Asgi) -> None:
        if scope.get("type") != "http" or scope.get("path") != RECALL_PATH:
            await self._app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # unless the app starts a response

        async def send_and_see(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self._app(scope, receive, send_and_see)
        finally:
            self._metrics.recall_requests.labels(str(status)).inc()
            self._metrics.recall_latency.observe(time.perf_counter() - started)


def instrument_runtime(runtime: Runtime, metrics: Metrics) -> None:
    """Swap the runtime's LLM for one that reports usage and fallbacks to `metrics`.

    Call it before building handlers from the runtime (they take the LLM when built).
    """
    runtime.llm = build_language_model(
        runtime.settings, on_usage=usage_hook(metrics), on_fallback=fallback_hook(metrics)
    )


def instrumented_recall_app(settings: Settings, metrics: Metrics | None = None) -> FastAPI:
    """The recall API over the configured stores, with memstream's metrics on `/metrics`:
    requests by status, whole and per-stage latency, and the LLM's usage (plan, gate)."""
    metrics = metrics or Metrics(process_registry())

    async def open_instrumented() -> Runtime:
        runtime = await open_runtime(settings)
        instrument_runtime(runtime, metrics)
        return runtime

    app = create_app(
        open_instrumented,
        settings=settings,
        registry=metrics.registry,
        observe=recall_observer(metrics),
    )
    app.add_middleware(RecallMetricsMiddleware, metrics=metrics)
    return app


# --- backlog ---------------------------------------------------------------------------

LagReader = Callable[[str, str, Sequence[str]], Awaitable[dict[tuple[str, int], int]]]


class BacklogCollector:
    """Sets the consumer-lag and pending-window gauges; run it in one process only."""

    def __init__(
        self,
        metrics: Metrics,
        *,
        tree: TreeStore,
        bootstrap: str,
        groups: Mapping[str, Sequence[str]],
        lag_reader: LagReader = consumer_lag,
    ) -> None:
        self._metrics = metrics
        self._tree = tree
        self._bootstrap = bootstrap
        self._groups = groups  # consumer group -> the topics it consumes
        self._lag_reader = lag_reader

    async def collect_lag(self) -> None:
        for group, topics in self._groups.items():
            lag = await self._lag_reader(self._bootstrap, group, list(topics))
            for (topic, partition), behind in lag.items():
                self._metrics.consumer_lag.labels(group, topic, str(partition)).set(behind)

    async def collect_pending(self) -> None:
        counts = await self._tree.open_window_counts()
        for level in CONSOLIDATED_LEVELS:
            self._metrics.windows_pending.labels(level).set(counts.get(int(level[1:]), 0))
        if counts.get(int(Level.SEGMENT)):
            log.warning("open L1 windows in the state: %d", counts[int(Level.SEGMENT)])

    async def collect_once(self) -> None:
        """Both collections; a failure is counted and logged, never raised."""
        for name, collect in (
            ("consumer_lag", self.collect_lag),
            ("windows_pending", self.collect_pending),
        ):
            try:
                await collect()
            except Exception:
                self._metrics.collector_errors.labels(name).inc()
                log.warning("metrics collector %s failed", name, exc_info=True)

    async def run(self, interval_s: float) -> None:
        """Collect every `interval_s` until cancelled."""
        while True:
            await self.collect_once()
            await asyncio.sleep(interval_s)


# --- HTTP ------------------------------------------------------------------------------

LiveCheck = Callable[[], bool]
ReadyCheck = Callable[[], Awaitable[bool]]


async def _always_ready() -> bool:
    return True


@asynccontextmanager
async def serve_metrics(
    registry: CollectorRegistry,
    port: int,
    *,
    host: str = "0.0.0.0",
    live: LiveCheck = lambda: True,
    ready: ReadyCheck = _always_ready,
) -> AsyncIterator[int]:
    """Serve `/metrics`, `/healthz` (liveness) and `/readyz` (readiness) on this loop.

    Yields the bound port (useful with `port=0`). A readiness check that raises or takes
    more than 5 s counts as not ready.
    """

    async def metrics(_: web.Request) -> web.Response:
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(_: web.Request) -> web.Response:
        ok = live()
        return web.json_response({"live": ok}, status=200 if ok else 503)

    async def readyz(_: web.Request) -> web.Response:
        try:
            ok = await asyncio.wait_for(ready(), timeout=5.0)
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
