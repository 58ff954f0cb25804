"""Trace context on the records the SDK sends, when OpenTelemetry is installed.

Each send runs in a PRODUCER span and carries its W3C trace context (`traceparent`) in the
record headers, so the workers' spans join the agent's trace. Without the OpenTelemetry API
installed, or with no tracer provider configured, the headers are empty and nothing is
recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

Headers = list[tuple[str, bytes]]


@contextmanager
def producing(topic: str, value_type: str, user_id: str) -> Iterator[Headers]:
    """A span around one send; yields the headers that carry it to the consumer."""
    try:
        from opentelemetry import propagate, trace
    except ImportError:  # tracing is optional for SDK users
        yield []
        return
    tracer = trace.get_tracer("memstream.client")
    attributes = {
        "messaging.system": "kafka",
        "messaging.destination.name": topic,
        "messaging.kafka.message.key": user_id,
        "memstream.event.type": value_type,
    }
    with tracer.start_as_current_span(
        f"send {value_type}", kind=trace.SpanKind.PRODUCER, attributes=attributes
    ):
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        yield [(name, text.encode()) for name, text in carrier.items()]


def context_headers() -> dict[str, str]:
    """The current trace context as HTTP headers (empty without OpenTelemetry or a span)."""
    try:
        from opentelemetry import propagate
    except ImportError:
        return {}
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier
