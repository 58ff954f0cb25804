"""One trace follows a turn from the producer through the broker to its summaries, and a
recall from the caller through the API's stages (spans kept by the SDK's in-memory exporter)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import pairwise
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

from memstream.client import AsyncMemstreamProducer, AsyncRecallClient, turn_event
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.settings import Settings

from .sdk_stack import API_KEY, serving_everything

pytestmark = pytest.mark.integration
USER = "traced-ann"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """A global tracer provider for this test only (OpenTelemetry lets one be set once)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    previous = trace._TRACER_PROVIDER
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace.set_tracer_provider(provider)
    yield exporter
    provider.shutdown()
    trace._TRACER_PROVIDER = previous
    trace._TRACER_PROVIDER_SET_ONCE = Once()


def _chain(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[str]:
    """Span names from `span` up to its root, through parents recorded in this process."""
    names = [span.name]
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        names.append(span.name)
    return names


def _children(parent: ReadableSpan, spans: Sequence[ReadableSpan]) -> dict[str, ReadableSpan]:
    """The first child span of each name under `parent`."""
    found: dict[str, ReadableSpan] = {}
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        if span.parent is not None and span.parent.span_id == parent.context.span_id:
            found.setdefault(span.name, span)
    return found


async def test_one_trace_from_producer_to_summary_and_through_recall(
    spans: InMemorySpanExporter, settings: Settings, tmp_path: Path
) -> None:
    async with serving_everything(settings, tmp_path) as stack:
        producer = AsyncMemstreamProducer(
            stack.settings.broker.bootstrap,
            topic_prefix=stack.settings.broker.topic_prefix,
            idempotent=False,
        )
        async with producer:
            # Queued together (publish_turn would wait for each ack): one batch, one L1.
            await producer.publish(
                turn_event(
                    user_id=USER,
                    session_id="s1",
                    seq=0,
                    text="I moved to Porto in March.",
                    ts="2024-03-04T10:00:00+00:00",
                )
            )
            await producer.publish(
                turn_event(
                    user_id=USER,
                    session_id="s1",
                    seq=1,
                    role="assistant",
                    text="Porto, nice!",
                    ts="2024-03-04T10:00:05+00:00",
                )
            )
            await producer.end_session(
                user_id=USER, session_id="s1", ts="2024-03-04T10:01:00+00:00"
            )
        await wait_caught_up(stack.running.container, [USER], timeout_s=120)
        with trace.get_tracer("test").start_as_current_span("agent.answer") as asking:
            async with AsyncRecallClient(stack.url, api_key=API_KEY) as memory:
                await memory.recall(USER, "Where did I move?")

    finished = spans.get_finished_spans()
    by_id = {s.context.span_id: s for s in finished}
    sends = [s for s in finished if s.name == "send turn.v1"]
    first_send = min(sends, key=lambda s: s.start_time or 0)
    segmenter = [s for s in finished if s.name == "memstream.segmenter"]
    in_turn_trace = [s for s in segmenter if s.context.trace_id == first_send.context.trace_id]
    summaries = [
        s
        for s in finished
        if s.name == "memstream.consolidator"
        and any(e.name == "summary.written" for e in s.events)
        and s.context.trace_id == first_send.context.trace_id
    ]

    # The turn's trace: the SDK's send, the segmenter's batch (an L1 written), then the
    # consolidator writing the summaries of the windows that batch closed.
    assert in_turn_trace and in_turn_trace[0].parent.span_id == first_send.context.span_id
    assert any(e.name == "l1.written" for e in in_turn_trace[0].events)
    assert summaries
    chain = _chain(summaries[0], by_id)
    assert chain[-2:] == ["memstream.segmenter", "send turn.v1"], chain
    # Inside the segmenter's batch, a child span per phase: the edge validates the records,
    # the reducer runs, the LLM writes the L1, the embedder, the stores' writes, the publisher.
    batch = next(s for s in in_turn_trace if any(e.name == "l1.written" for e in s.events))
    steps = _children(batch, finished)
    wanted = [
        "memstream.validate",
        "memstream.reduce",
        "memstream.llm.write_segment",
        "memstream.embed",
        "memstream.store.upsert",
        "memstream.store.commit_user",
        "memstream.publish",
    ]
    assert set(wanted) <= set(steps), sorted(steps)
    # One after another, but for the embedding, which runs ahead while the reducer works.
    ordered = [steps[name] for name in wanted if name != "memstream.embed"]
    gaps = [(b.start_time or 0) - (a.end_time or 0) for a, b in pairwise(ordered)]
    assert all(gap >= 0 for gap in gaps), gaps
    # The window the L1 closed: an event of the segmenter's span, and the consolidator's span
    # that wrote its summary is a child of the span that published the closure.
    assert any(e.name == "window.closed" for e in batch.events)
    assert chain[-4:-1] == ["memstream.consolidator", "memstream.publish", "memstream.segmenter"]
    consolidating = _children(summaries[0], finished)
    assert {"memstream.llm.consolidate", "memstream.store.commit_nodes"} <= set(consolidating)
    assert first_send.kind == trace.SpanKind.PRODUCER
    # The recall: the caller's span -> the API's server span -> one span per stage.
    server = next(s for s in finished if s.name == "POST /v1/recall")
    assert server.parent is not None
    assert server.parent.span_id == asking.get_span_context().span_id
    # (FastAPI adds spans of its own in between: the stages are descendants, not children.)
    stages = {s.name for s in finished if "POST /v1/recall" in _chain(s, by_id)[1:]}
    assert {"recall.plan", "recall.embed", "recall.gate"} <= stages, stages
    assert all(
        s.context.trace_id == asking.get_span_context().trace_id
        for s in finished
        if s.name.startswith("recall.")
    )
