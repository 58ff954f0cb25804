"""Spans a stack exports, kept in a file: an OTLP/HTTP receiver for the benchmarks' `--trace`.

A stack started with `MEMSTREAM_OTLP_TRACES_ENDPOINT` at `SpanFile.endpoint` sends its spans
here (protobuf, as the SDK's exporter posts them); each becomes one JSON line (name, start
and end in epoch seconds, attributes). The benchmark adds lines of its own (a phase's window,
each quiet turn's publish time and freshness) with `note`, so one file holds what is needed
to see where a slow turn waited (`memstream_lab.bench.trace_batches`).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


class SpanFile:
    """Receives spans on a free local port for as long as it is entered."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._out = path.open("a", encoding="utf-8")
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1/traces"

    def note(self, line: dict[str, Any]) -> None:
        """A line of the benchmark's own (it must carry a `kind`)."""
        with self._lock:
            self._out.write(json.dumps(line) + "\n")

    def __enter__(self) -> SpanFile:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            self._out.close()

    def _received(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        lines = [
            {
                "kind": "span",
                "name": span.name,
                "start": span.start_time_unix_nano / 1e9,
                "end": span.end_time_unix_nano / 1e9,
                "attributes": {a.key: _value(a.value) for a in span.attributes},
            }
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]
        with self._lock:
            for line in lines:
                self._out.write(json.dumps(line) + "\n")


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return (
        getattr(value, kind)
        if kind in {"string_value", "int_value", "double_value", "bool_value"}
        else None
    )


def _handler_for(spans: SpanFile) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            spans._received(body)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return  # one line per export on stderr would drown the benchmark's output

    return Handler
