"""What a run asked of its LLM endpoint, per operation, read from the process's metrics.

The backend counts every attempt, its latency, its errors and the calls the offline rules
answered in its place (`memstream.metrics`: `memstream_llm_*`). An evaluation run that writes
with an endpoint reports these beside its scores, so a share is read with what it cost and
how much of it the rules wrote. The 95th percentile is the upper bound of the histogram
bucket that holds it (None past the last bound): the buckets are the product's.
"""

from __future__ import annotations

import math
from typing import Any

from prometheus_client import CollectorRegistry

from memstream.metrics import LLM_LATENCY_BUCKETS, LLM_OPERATIONS


def llm_usage(registry: CollectorRegistry) -> dict[str, dict[str, Any]]:
    """Per operation the endpoint was asked for: attempts, mean and bucketed p95 seconds,
    tokens, errors by kind and fallbacks to the rules. Operations never asked are left out."""
    usage: dict[str, dict[str, Any]] = {}
    for operation in LLM_OPERATIONS:
        label = {"operation": operation}
        attempts = _value(registry, "memstream_llm_requests_total", label)
        fallbacks = _value(registry, "memstream_llm_fallbacks_total", label)
        if not attempts and not fallbacks:
            continue
        seconds = _value(registry, "memstream_llm_request_seconds_sum", label)
        usage[operation] = {
            "attempts": int(attempts),
            "mean_s": round(seconds / attempts, 2) if attempts else None,
            "p95_at_most_s": _bucket_p95(registry, operation, attempts),
            "prompt_tokens": int(_tokens(registry, operation, "prompt")),
            "completion_tokens": int(_tokens(registry, operation, "completion")),
            "errors": _errors(registry, operation),
            "fallbacks": int(fallbacks),
        }
    return usage


def _value(registry: CollectorRegistry, name: str, labels: dict[str, str]) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def _tokens(registry: CollectorRegistry, operation: str, kind: str) -> float:
    labels = {"operation": operation, "kind": kind}
    return _value(registry, "memstream_llm_tokens_total", labels)


def _bucket_p95(registry: CollectorRegistry, operation: str, attempts: float) -> float | None:
    if not attempts:
        return None
    for bound in (*LLM_LATENCY_BUCKETS, math.inf):
        labels = {"operation": operation, "le": _le(bound)}
        if _value(registry, "memstream_llm_request_seconds_bucket", labels) >= 0.95 * attempts:
            return bound if bound != math.inf else None
    return None


def _le(bound: float) -> str:
    # prometheus_client labels its buckets with floatToGoString: "1.0", "0.25", "+Inf".
    return "+Inf" if bound == math.inf else str(float(bound))


def _errors(registry: CollectorRegistry, operation: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for metric in registry.collect():
        if metric.name != "memstream_llm_errors":
            continue
        for sample in metric.samples:
            if sample.name.endswith("_total") and sample.labels.get("operation") == operation:
                found[sample.labels["error"]] = int(sample.value)
    return found
