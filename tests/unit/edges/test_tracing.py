"""Tracing is off by default, and once configured its spans reach a real OTLP/HTTP receiver."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

from memstream.contracts.records import Consumed, RawEvent
from memstream.edges import tracing
from memstream.edges.faust.app import consume_batch


@pytest.fixture
def restore_provider() -> Iterator[None]:
    previous = trace._TRACER_PROVIDER
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    yield
    trace._TRACER_PROVIDER = previous
    trace._TRACER_PROVIDER_SET_ONCE = Once()


class _Receiver(BaseHTTPRequestHandler):
    posts: list[tuple[str, bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Receiver.posts.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_off_without_an_endpoint() -> None:
    async def handle(batch: list[Any]) -> None:
        return None

    assert tracing.configure("", "memstream") is None
    assert not tracing.enabled()
    assert tracing.traced_batches("segmenter", handle) is handle
    assert tracing.batch_spans() is None
    assert tracing.recall_stage_spans() is None


def test_spans_reach_an_otlp_http_receiver(restore_provider: None) -> None:
    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        stop = tracing.configure(f"http://127.0.0.1:{server.server_port}", "memstream-test")
        assert stop is not None and tracing.enabled()
        with trace.get_tracer("test").start_as_current_span("a-turn"):
            pass
        stop()  # flushes the batch processor
    finally:
        server.shutdown()
    assert [path for path, _ in _Receiver.posts] == ["/v1/traces"]
    assert b"a-turn" in _Receiver.posts[0][1] and b"memstream-test" in _Receiver.posts[0][1]


@pytest.fixture
def kept(restore_provider: None) -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    yield exporter
    provider.shutdown()


class _Port:
    def __init__(self) -> None:
        self.dim = 3

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] for _ in texts]

    async def ping(self) -> bool:
        return True


async def test_a_traced_port_spans_its_named_calls_under_the_current_span(
    kept: InMemorySpanExporter,
) -> None:
    port = tracing.traced_port(_Port(), tracing.EMBEDDER_CALLS)
    assert port.dim == 3  # attributes pass through
    await port.embed(["outside any span"])  # no batch to join: no span of its own
    with trace.get_tracer("test").start_as_current_span("batch") as batch:
        assert await port.embed(["a", "b"]) == [[1.0, 0.0, 0.0]] * 2
        assert await port.ping()  # not named: not traced
    spans = {s.name: s for s in kept.get_finished_spans()}
    assert set(spans) == {"batch", "memstream.embed"}
    child = spans["memstream.embed"]
    assert child.parent is not None
    assert child.parent.span_id == batch.get_span_context().span_id


async def test_the_edge_opens_the_batch_span_and_validates_inside_it(
    kept: InMemorySpanExporter,
) -> None:
    spans = tracing.batch_spans()
    assert spans is not None
    handled: list[str] = []

    async def handle(batch: list[Any]) -> None:
        with spans.phase("reduce"):
            handled.append("reduced")

    async def no_dead_letters(raw: RawEvent, reason: str, field_path: str | None = None) -> None:
        raise AssertionError(reason)

    raw = RawEvent(b"{}", "turns", 0, 7, None, ())
    with spans.batch("segmenter", [raw]):
        await consume_batch(
            [raw],
            lambda r: Consumed(r, r),
            tracing.traced_batches("segmenter", handle),
            no_dead_letters,
            lambda letter: None,
            tracing=spans,
        )
    by_name = {s.name: s for s in kept.get_finished_spans()}
    batch = by_name["memstream.segmenter"]
    assert batch.kind == trace.SpanKind.CONSUMER
    assert batch.attributes is not None and batch.attributes["memstream.stage"] == "segmenter"
    for phase in ("memstream.validate", "memstream.reduce"):
        parent = by_name[phase].parent
        assert parent is not None and parent.span_id == batch.context.span_id
    assert handled == ["reduced"]
