"""Metrics at the edges: glue between the running parts and `memstream.metrics`.

The handlers stay untouched: `InstrumentedSegmenter` and `InstrumentedConsolidator` wrap
them with the same call signature and turn their reports into metrics; `usage_hook` and
`fallback_hook` plug into the LLM backend; `recall_observer` and `HttpMetricsMiddleware`
instrument the recall API; `BacklogCollector` polls what no handler sees (consumer lag,
open windows). `edges.handler_chain` puts the handlers' wrappers in place; the composition
root (`memstream.bootstrap`) plugs the rest in.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from memstream.adapters.kafka.lag import consumer_lag
from memstream.adapters.llm.fallback import FallbackHook
from memstream.consolidator.handler import Consolidator, Outcome
from memstream.contracts.records import Consumed
from memstream.domain.divergence import Divergence
from memstream.domain.models import InputEvent, Level, WindowClosed
from memstream.metrics import (
    CONSOLIDATED_LEVELS,
    HTTP_METHODS,
    MOST_TENANT_LABELS,
    UNMATCHED_ROUTE,
    Metrics,
)
from memstream.ports import BacklogReads
from memstream.recall.pipeline import RecallResult
from memstream.recall.rebuilds import pending_over_users
from memstream.segmenter.handler import BatchReport

if TYPE_CHECKING:
    from memstream.adapters.llm.openai import UsageHook

log = logging.getLogger(__name__)


# --- handlers --------------------------------------------------------------------------


def observe_batch(
    metrics: Metrics, report: BatchReport, seconds: float, tenants: set[str] | None = None
) -> None:
    """Record what one segmenter batch did; `seconds` is how long `handle_batch` took.

    Records dead-lettered at decoding never reach the segmenter: the Faust edge counts them.
    """
    metrics.segmenter_batch.observe(seconds)
    metrics.ingested.labels("accepted").inc(max(0, report.events - report.duplicates))
    metrics.ingested.labels("duplicate").inc(report.duplicates - len(report.conflicts))
    metrics.ingested.labels("conflict").inc(len(report.conflicts))
    for latency in report.l1_latencies:
        metrics.l1_latency.observe(latency)
    for closure in report.closures:
        metrics.windows_closed.labels(closure.window.level.label, closure.reason).inc()
    for tenant, turns in report.diverted.items():
        label = tenant_label(tenant, tenants if tenants is not None else set())
        metrics.diverted.labels(label).inc(turns)
    if report.overflow_lag is not None:
        metrics.overflow_lag.set(report.overflow_lag)


def tenant_label(tenant: str, labelled: set[str]) -> str:
    """`tenant` as a label of the diverted turns: 'default' outside every tenant, 'other'
    once `MOST_TENANT_LABELS` tenants have a series (producers choose the names);
    `labelled`, the tenants given a series so far, grows."""
    name = tenant or "default"
    if name in labelled or len(labelled) < MOST_TENANT_LABELS:
        labelled.add(name)
        return name
    return "other"


class BatchHandling(Protocol):
    """What `InstrumentedSegmenter` wraps: the segmenter, or one side of its fair share."""

    @property
    def handled(self) -> int: ...

    async def handle_batch(self, batch: Sequence[Consumed[InputEvent]]) -> BatchReport: ...


class InstrumentedSegmenter:
    """A `Segmenter` that records each batch's report and duration."""

    def __init__(
        self,
        segmenter: BatchHandling,
        metrics: Metrics,
        *,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._segmenter = segmenter
        self._metrics = metrics
        self._clock = clock
        self._tenants: set[str] = set()

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
        observe_batch(self._metrics, report, self._clock() - started, self._tenants)
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


def store_error_hook(metrics: Metrics, store: str = "redis") -> Callable[[str], None]:
    """An `on_error` callback for a store: counts its failed commands by kind."""

    def record(kind: str) -> None:
        metrics.store_errors.labels(store, kind).inc()

    return record


# --- recall ----------------------------------------------------------------------------

RECALL_PATH = "/v1/recall"
_Asgi = Callable[..., Awaitable[None]]


def recall_observer(metrics: Metrics) -> Callable[[RecallResult], None]:
    """An `observe` callback for `recall.api.create_app`: per-stage durations."""

    # Each stage's series, looked up once (`labels` takes a lock and hashes the values on
    # every call, a dozen times a recall); the stages are a fixed few.
    series: dict[str, Any] = {}

    def record(result: RecallResult) -> None:
        for stage, ms in result.timings_ms.items():
            if stage != "total":
                child = series.get(stage)
                if child is None:
                    child = series[stage] = metrics.recall_stage_latency.labels(stage)
                child.observe(ms / 1000)

    return record


class HttpMetricsMiddleware:
    """ASGI middleware counting and timing every request by route template, method and
    status, and `POST /v1/recall` in its own series as well:
    `app.add_middleware(HttpMetricsMiddleware, metrics=metrics)`.

    The route is the template of the app's spec (`/v1/users/{user_id}/profile`) that the
    path matches, found before the request runs, so refusals before routing (401, 413) are
    labelled too; a path no template matches is `UNMATCHED_ROUTE`.
    """

    def __init__(self, app: _Asgi, metrics: Metrics) -> None:
        self._app = app
        self._metrics = metrics
        self._routes: RouteTemplates | None = None
        # The series of each route, method and status, looked up once (`labels` takes a lock
        # and hashes the values on every call); routes are templates, so they are few.
        self._counted: dict[tuple[str, str, int], tuple[Any, Any, Any]] = {}

    async def __call__(self, scope: dict[str, Any], receive: _Asgi, send: _Asgi) -> None:
        if scope.get("type") != "http":
            await self._app(scope, receive, send)
            return
        if self._routes is None:
            self._routes = RouteTemplates(scope.get("app"))
            self._routes.prime(self._metrics)
        route = self._routes.template(scope.get("path", ""))
        method = scope.get("method", "")
        method = method if method in HTTP_METHODS else "other"
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
            seconds = time.perf_counter() - started
            requests, latency, recalls = self._series(route, method, status)
            requests.inc()
            latency.observe(seconds)
            if recalls is not None:
                recalls.inc()
                self._metrics.recall_latency.observe(seconds)

    def _series(self, route: str, method: str, status: int) -> tuple[Any, Any, Any]:
        """The request counter's and the latency's series, and the recall counter's (None
        for anything but `POST /v1/recall`)."""
        key = (route, method, status)
        found = self._counted.get(key)
        if found is None:
            metrics = self._metrics
            recalls = None
            if route == RECALL_PATH and method == "POST":
                recalls = metrics.recall_requests.labels(str(status))
            found = self._counted[key] = (
                metrics.http_requests.labels(route, method, str(status)),
                metrics.http_latency.labels(route, method),
                recalls,
            )
        return found


class RouteTemplates:
    """The path templates of an app: those of its OpenAPI spec, with their methods, and of
    its plain routes (docs pages)."""

    def __init__(self, app: Any) -> None:
        spec = app.openapi() if hasattr(app, "openapi") else {}
        self.methods: dict[str, list[str]] = {
            path: [m.upper() for m in operations]
            for path, operations in spec.get("paths", {}).items()
        }
        plain = [
            r.path for r in getattr(app, "routes", ()) if isinstance(getattr(r, "path", None), str)
        ]
        paths = dict.fromkeys([*self.methods, *plain])
        from starlette.routing import compile_path  # the API's, not a worker's, start-up

        self._compiled = [(compile_path(path)[0], path) for path in paths]

    def template(self, path: str) -> str:
        for pattern, template in self._compiled:
            if pattern.match(path):
                return template
        return UNMATCHED_ROUTE

    def prime(self, metrics: Metrics) -> None:
        """Create each operation's 500 series at zero, so the first error is an increase."""
        for path, methods in self.methods.items():
            for method in methods:
                if method in HTTP_METHODS:
                    metrics.http_requests.labels(path, method, "500")


# --- backlog ---------------------------------------------------------------------------

LagReader = Callable[[str, str, Sequence[str]], Awaitable[dict[tuple[str, int], int]]]


class BacklogCollector:
    """Sets the consumer-lag and pending-window gauges; run it in one process only."""

    def __init__(
        self,
        metrics: Metrics,
        *,
        tree: BacklogReads,
        bootstrap: str,
        groups: Mapping[str, Sequence[str]],
        lag_reader: LagReader = consumer_lag,
        divergence: Callable[[], Awaitable[Divergence]] | None = None,
    ) -> None:
        self._metrics = metrics
        self._divergence = divergence
        self._disagreement_logged = ""
        self._tree = tree
        self._bootstrap = bootstrap
        self._groups = groups  # consumer group -> the topics it consumes
        self._lag_reader = lag_reader
        self._open_leaves_logged = 0

    async def collect_lag(self) -> None:
        for group, topics in self._groups.items():
            lag = await self._lag_reader(self._bootstrap, group, list(topics))
            for (topic, partition), behind in lag.items():
                self._metrics.consumer_lag.labels(group, topic, str(partition)).set(behind)

    async def collect_pending(self) -> None:
        counts = await self._tree.open_window_counts()
        for level in CONSOLIDATED_LEVELS:
            self._metrics.windows_pending.labels(level).set(counts.get(int(level[1:]), 0))
        # Said when the count changes, not at every collection: a collector runs on a timer,
        # and a log is read by people (the gauge has the series).
        open_leaves = counts.get(int(Level.SEGMENT), 0)
        if open_leaves != self._open_leaves_logged:
            if open_leaves:
                log.warning("open L1 windows in the state: %d", open_leaves)
            else:
                log.info("no open L1 windows in the state any more")
            self._open_leaves_logged = open_leaves

    async def collect_rebuilds(self) -> None:
        self._metrics.rebuild_pending_windows.set(await pending_over_users(self._tree))

    async def collect_divergence(self) -> None:
        if self._divergence is None:
            return
        found = await self._divergence()
        for kind, value in found.by_kind().items():
            self._metrics.store_divergence.labels(kind).set(value)
        # Said when it changes, as above.
        if found.reason != self._disagreement_logged:
            level = (
                logging.INFO
                if found.stores_agree and not found.users_differing
                else logging.WARNING
            )
            log.log(level, "tree and index: %s", found.reason)
            self._disagreement_logged = found.reason

    async def collect_once(self) -> None:
        """Every collection; a failure is counted and logged, never raised."""
        for name, collect in (
            ("consumer_lag", self.collect_lag),
            ("windows_pending", self.collect_pending),
            ("rebuild_pending_windows", self.collect_rebuilds),
            ("store_divergence", self.collect_divergence),
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
