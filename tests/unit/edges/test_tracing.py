"""Tracing is off by default, and once configured its spans reach a real OTLP/HTTP receiver."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.util._once import Once

from memstream.edges import tracing


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
