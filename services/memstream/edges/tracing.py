"""OpenTelemetry traces: a turn's way from the producer through the workers, and each recall.

Off unless an OTLP endpoint is configured (`MEMSTREAM_OTLP_TRACES_ENDPOINT`, or the standard
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT`): then `configure`
installs a tracer provider that batches spans to it over OTLP/HTTP. While no provider is
installed the wrappers below are not even put in place, so tracing costs nothing when off.

How one trace follows a turn: the producer (the SDK) sends it in a PRODUCER span and puts the
W3C trace context (`traceparent`) in the record headers. The segmenter's batch runs in a
CONSUMER span whose parent is the first traced record of the batch (the others are linked),
with an event per L1 written and per window closed. Whatever the batch publishes (window
closures) carries that span's context in its headers (`KafkaPublisher`), so the
consolidator's span that writes the session, day, week or month summary is its child. A
recall request runs in a SERVER span (parent: the caller's `traceparent`), with one child
span per pipeline stage, placed from the stage timings the pipeline measures.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, SpanKind

from memstream.contracts.records import Consumed
from memstream.recall.pipeline import RecallResult

TRACER_NAME = "memstream"
BatchHandler = Callable[[list[Consumed[Any]]], Awaitable[Any]]
_Asgi = Callable[..., Awaitable[None]]


def configure(endpoint: str, service_name: str) -> Callable[[], None] | None:
    """Install an OTLP/HTTP tracer provider when `endpoint` is set; returns its shutdown
    (which flushes the spans still queued), or None when tracing stays off."""
    if not endpoint:
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as missing:
        raise RuntimeError(
            "an OTLP endpoint is set but the tracing SDK is not installed: install "
            "memstream[tracing]"
        ) from missing

    # The base endpoint variable names the collector; traces go to its /v1/traces path.
    url = endpoint if endpoint.rstrip("/").endswith("/v1/traces") else endpoint.rstrip("/")
    if not url.endswith("/v1/traces"):
        url += "/v1/traces"
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    trace.set_tracer_provider(provider)
    return provider.shutdown


def enabled() -> bool:
    """A real tracer provider is installed (by `configure`, or by a test)."""
    provider = trace.get_tracer_provider()
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


def _tracer() -> trace.Tracer:
    return trace.get_tracer(TRACER_NAME)


def _context_of(item: Consumed[Any]) -> Context | None:
    headers = {name: value.decode("latin-1") for name, value in item.raw.headers}
    if "traceparent" not in headers:
        return None
    return propagate.extract(headers)


def traced_batches(stage: str, handle: BatchHandler) -> BatchHandler:
    """`handle` run in a CONSUMER span joined to the traces its records carry; as it is when
    tracing is off. `stage` names the span ("segmenter", "consolidator")."""
    if not enabled():
        return handle

    async def run(batch: list[Consumed[Any]]) -> Any:
        contexts = [c for c in map(_context_of, batch) if c is not None]
        parent = contexts[0] if contexts else None
        links = [Link(trace.get_current_span(c).get_span_context()) for c in contexts[1:]]
        attributes: dict[str, str | int] = {
            "messaging.system": "kafka",
            "messaging.operation.type": "process",
            "messaging.batch.message_count": len(batch),
            "messaging.destination.name": batch[0].raw.topic if batch else "",
        }
        with _tracer().start_as_current_span(
            f"memstream.{stage}",
            context=parent,
            kind=SpanKind.CONSUMER,
            links=links,
            attributes=attributes,
        ) as span:
            outcome = await handle(batch)
            _describe(span, outcome)
            return outcome

    return run


def _describe(span: trace.Span, outcome: object) -> None:
    """Span events for what a batch wrote: L1s and window closures, or consolidations."""
    for node in getattr(outcome, "segments", ()):
        span.add_event("l1.written", {"memory.id": node.id, "memory.sources": node.source_ids})
    for closure in getattr(outcome, "closures", ()):
        span.add_event(
            "window.closed",
            {"window.level": int(closure.window.level), "window.reason": closure.reason},
        )
    if isinstance(outcome, Sequence):
        for item in outcome:
            node = getattr(item, "node", None)
            if node is not None and getattr(item, "skipped", "") is None:
                span.add_event("summary.written", {"memory.id": node.id, "level": int(node.level)})


_CONCURRENT_FIRST = frozenset({"plan", "leaves", "embed"})


def recall_stage_spans() -> Callable[[RecallResult], None] | None:
    """An observer of recall results that adds a span per pipeline stage (None when off)."""
    if not enabled():
        return None

    def record(result: RecallResult) -> None:
        timings = result.timings_ms
        end = time.time_ns()
        start = end - int(timings.get("total", sum(timings.values())) * 1e6)
        # The pipeline plans while it finds the leaves (embedding the query on the way);
        # the other stages follow one another. Spans are laid out that way from the timings.
        first = {k: v for k, v in timings.items() if k in _CONCURRENT_FIRST}
        at = start + int(max(first.values(), default=0.0) * 1e6)
        for stage, ms in timings.items():
            if stage == "total":
                continue
            begin = start if stage in first else at
            stop = begin + int(ms * 1e6)
            _tracer().start_span(f"recall.{stage}", start_time=begin).end(end_time=stop)
            if stage not in first:
                at = stop

    return record


def observing_all(
    observers: Sequence[Callable[[RecallResult], None] | None],
) -> Callable[[RecallResult], None] | None:
    """One recall observer calling each of `observers` that is not None (None if none is)."""
    present = [o for o in observers if o is not None]
    if not present:
        return None

    def observe(result: RecallResult) -> None:
        for each in present:
            each(result)

    return observe


class TracingMiddleware:
    """ASGI middleware: each `/v1` request in a SERVER span, continuing the caller's trace."""

    def __init__(self, app: _Asgi) -> None:
        self._app = app

    async def __call__(self, scope: dict[str, Any], receive: _Asgi, send: _Asgi) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith("/v1/"):
            await self._app(scope, receive, send)
            return
        carrier = _header_map(scope.get("headers", ()))
        name = f"{scope['method']} {scope.get('route_path', scope['path'])}"
        with _tracer().start_as_current_span(
            name, context=propagate.extract(carrier), kind=SpanKind.SERVER
        ) as span:
            span.set_attribute("http.request.method", scope["method"])
            span.set_attribute("url.path", scope["path"])

            async def see(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    span.set_attribute("http.response.status_code", message["status"])
                await send(message)

            await self._app(scope, receive, see)


def _header_map(headers: Sequence[tuple[bytes, bytes]] | Mapping[bytes, bytes]) -> dict[str, str]:
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in pairs}
