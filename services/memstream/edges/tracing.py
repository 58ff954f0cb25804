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

Inside a batch span, child spans follow the work: `memstream.validate` (the edge decoding and
checking the records), `memstream.reduce` (the segmenter's reducer pass, through the `phase`
hook its constructor takes), and one span per call of a port (`traced_port`): the LLM, the
embedder, the stores' writes and the publisher. The ports are wrapped where the handlers are
built (`wiring.handlers`) only when tracing is on, so the handlers import no OpenTelemetry
and pay nothing when it is off.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar, cast

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, SpanKind

from memstream.contracts.records import Consumed, RawEvent
from memstream.recall.pipeline import RecallResult

TRACER_NAME = "memstream"
BatchHandler = Callable[[list[Consumed[Any]]], Awaitable[Any]]
_Asgi = Callable[..., Awaitable[None]]
P = TypeVar("P")


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


def _context_of(raw: RawEvent) -> Context | None:
    headers = {name: value.decode("latin-1") for name, value in raw.headers}
    if "traceparent" not in headers:
        return None
    return propagate.extract(headers)


class BatchSpans:
    """What the Faust edge opens when tracing is on (`edges.faust.app.BatchTracing`): a
    CONSUMER span per batch joined to the traces its records carry, and child spans for the
    phases inside it."""

    @contextmanager
    def batch(self, stage: str, raws: Sequence[RawEvent]) -> Iterator[None]:
        """The batch's span, named after `stage` ("segmenter", "consolidator"): its parent is
        the first traced record of the batch, the other traced records are linked."""
        contexts = [c for c in map(_context_of, raws) if c is not None]
        parent = contexts[0] if contexts else None
        links = [Link(trace.get_current_span(c).get_span_context()) for c in contexts[1:]]
        attributes: dict[str, str | int] = {
            "messaging.system": "kafka",
            "messaging.operation.type": "process",
            "messaging.batch.message_count": len(raws),
            "messaging.destination.name": raws[0].topic if raws else "",
        }
        with _tracer().start_as_current_span(
            f"memstream.{stage}",
            context=parent,
            kind=SpanKind.CONSUMER,
            links=links,
            attributes=attributes,
        ):
            yield

    def phase(self, name: str) -> AbstractContextManager[None]:
        return phase(name)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """A child span of the current one for a step of the work (`memstream.<name>`)."""
    with _tracer().start_as_current_span(f"memstream.{name}"):
        yield


def batch_spans() -> BatchSpans | None:
    """The edge's batch tracing, or None when tracing is off."""
    return BatchSpans() if enabled() else None


def traced_batches(stage: str, handle: BatchHandler) -> BatchHandler:
    """`handle` with what it wrote added as events to the batch span the edge opened; as it
    is when tracing is off. `stage` is kept as an attribute of that span."""
    if not enabled():
        return handle

    async def run(batch: list[Consumed[Any]]) -> Any:
        outcome = await handle(batch)
        span = trace.get_current_span()
        span.set_attribute("memstream.stage", stage)
        _describe(span, outcome)
        return outcome

    return run


# The port calls that get a span each, by port: method -> span name. Reads of the stores are
# left out: they are many and small, and a turn's way is told by what is written.
EMBEDDER_CALLS = {"embed": "memstream.embed"}
LANGUAGE_MODEL_CALLS = {
    "write_segment": "memstream.llm.write_segment",
    "consolidate": "memstream.llm.consolidate",
}
TREE_WRITES = {
    "commit_user": "memstream.store.commit_user",
    "commit_nodes": "memstream.store.commit_nodes",
    "clear_outbox": "memstream.store.clear_outbox",
    "clear_outboxes": "memstream.store.clear_outboxes",
}
INDEX_WRITES = {"upsert": "memstream.store.upsert", "delete_points": "memstream.store.delete"}
PUBLISHER_CALLS = {"publish": "memstream.publish"}


class _TracedPort:
    """A port whose named async methods each run in a child span of the current span."""

    def __init__(self, port: object, calls: Mapping[str, str]) -> None:
        self._port = port
        self._calls = calls

    def __getattr__(self, attribute: str) -> Any:
        found = getattr(self._port, attribute)
        name = self._calls.get(attribute)
        if name is None:
            return found

        async def call(*args: Any, **kwargs: Any) -> Any:
            if not trace.get_current_span().get_span_context().is_valid:
                return await found(*args, **kwargs)  # outside any batch: no trace to join
            with _tracer().start_as_current_span(name):
                return await found(*args, **kwargs)

        return call


def traced_port(port: P, calls: Mapping[str, str]) -> P:
    """`port` with a span around each call of a method named in `calls` (method -> span name);
    put in place where the handlers are built (`wiring.handlers`) only when tracing is on."""
    return cast(P, _TracedPort(port, calls))


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
