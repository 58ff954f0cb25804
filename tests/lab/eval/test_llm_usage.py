"""What a run asked of its endpoint, read back from the metrics the backend's hooks fill."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from memstream.edges.instrumentation import fallback_hook, usage_hook
from memstream.metrics import Metrics
from memstream_lab.eval.llm_usage import llm_usage


def test_usage_is_summed_per_operation_with_its_errors_and_fallbacks() -> None:
    metrics = Metrics(CollectorRegistry())
    used, fell_back = usage_hook(metrics), fallback_hook(metrics)
    # Twenty fact readings: nineteen answered in 1.5 s, one cut short at 10 s and replaced.
    for _ in range(19):
        used("facts", 600, 40, 1.5, None)
    used("facts", 600, 256, 10.0, "invalid_output")
    fell_back("facts", ValueError("outside the schema"))
    used("segment", 500, 30, 0.3, None)

    usage = llm_usage(metrics.registry)

    assert set(usage) == {"facts", "segment"}  # operations never asked are left out
    facts = usage["facts"]
    assert facts["attempts"] == 20 and facts["fallbacks"] == 1
    assert facts["mean_s"] == round((19 * 1.5 + 10.0) / 20, 2)
    assert facts["p95_at_most_s"] == 2  # the bucket holding the 19th of 20
    assert (facts["prompt_tokens"], facts["completion_tokens"]) == (12_000, 19 * 40 + 256)
    assert facts["errors"] == {"invalid_output": 1}
    assert usage["segment"]["errors"] == {} and usage["segment"]["p95_at_most_s"] == 0.5


def test_a_fallback_without_an_answer_is_still_reported() -> None:
    metrics = Metrics(CollectorRegistry())
    fallback_hook(metrics)("gate", TimeoutError())
    assert llm_usage(metrics.registry)["gate"]["fallbacks"] == 1
    assert llm_usage(metrics.registry)["gate"]["mean_s"] is None
