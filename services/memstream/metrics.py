"""Every Prometheus metric of memstream, declared once, on a registry passed in.

Metrics are emitted at the edges (`memstream.edges.instrumentation`), never from domain
code.
Label values are bounded: levels `L1`-`L5`, the closure reasons of the event contract, LLM
operation names, and dead-letter categories (`dlq_category`), never raw text. The labelled
series that alerts use are created at zero up front, so `increase()` sees their first event.
"""

from __future__ import annotations

import re
from typing import get_args

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from memstream.domain.divergence import KINDS as DIVERGENCE_KINDS
from memstream.domain.models import ClosureReason, Level

# prometheus_client's switch to multiprocess mode: set (to an empty directory) before the
# processes that share one scrape endpoint start, as `memstream serve` does for its workers.
MULTIPROCESS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"

CONSOLIDATED_LEVELS = tuple(level.label for level in Level if level > Level.SEGMENT)
CLOSURE_REASONS: tuple[str, ...] = get_args(ClosureReason)
# A conflict is a duplicate event id with other content: the first copy is kept.
# forgotten: a turn sealed by its producer whose user's key is gone, dropped unread.
INGEST_OUTCOMES = ("accepted", "duplicate", "conflict", "dead_letter", "forgotten")
# How a store failed a command (adapters/redis/errors.py tells them apart): redirected or
# refused by a cluster, unreachable, or an error of another kind.
STORE_ERROR_KINDS = (
    "moved",
    "ask",
    "crossslot",
    "cluster_down",
    "try_again",
    "read_only",
    "timeout",
    "connection",
    "replica_lag",  # a commit's WAIT ran out before its replicas had it (it waits again)
    "response",
    "other",
)
CONSOLIDATION_RESULTS = ("written", "unchanged", "no_children")
LLM_OPERATIONS = (
    "segment", *(f"consolidate_l{int(lv)}" for lv in Level if lv > 1), "plan", "gate", "facts",
)  # fmt: skip

# Top-level fields of the turns topic's event types: a dead letter is filed under the field
# its first problem names. Anything else is "other", so the label set stays bounded.
_DLQ_FIELDS = (
    "type", "event_id", "user_id", "session_id", "seq", "speaker", "role", "text", "ts", "tz",
    "metadata", "now",
)  # fmt: skip
DLQ_REASONS = (
    "undecodable", "invalid_value", *(f"invalid_{f}" for f in _DLQ_FIELDS),
    "handler_failed", "conflict", "other",
)  # fmt: skip

# Seconds to hours: an L2 closes minutes after a session; an L5 waits for the month's L4s.
CONSOLIDATION_LAG_BUCKETS = (
    1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400,
)  # fmt: skip
# Broker to stored L1: the batching wait and one batch when live, minutes behind a backlog.
L1_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900)
# One batch: embedding plus a Redis transaction per user; seconds with a slow LLM.
SEGMENTER_BATCH_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
# One chat completion, from a fast local model to a slow hosted one.
LLM_LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60)
# A recall answers interactively: tens of milliseconds to a few seconds with LLM gating.
RECALL_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10)
# Any route of the recall API: a probe answers in a millisecond, a gated recall in seconds.
HTTP_LATENCY_BUCKETS = (0.001, 0.0025, *RECALL_LATENCY_BUCKETS)
# Methods the API serves; anything else a client sends is "other" (a bounded label).
HTTP_METHODS = ("GET", "POST", "DELETE", "HEAD", "OPTIONS", "PUT", "PATCH")
KEY_FILE_OUTCOMES = ("loaded", "reloaded", "refused")
# The route label of a request no route matched (not its raw path: that is unbounded).
UNMATCHED_ROUTE = "unmatched"

_FIELD_HEAD = re.compile(r"^([a-z_]+)(?:[.\[]|$)")


def dlq_category(reason: str) -> str:
    """A bounded label for a dead-letter reason such as `ts: 'yesterday' is not a date-time`."""
    if reason.startswith("undecodable"):
        return "undecodable"
    if reason.startswith("handler failed"):
        return "handler_failed"
    if reason.startswith("conflict"):
        return "conflict"
    head = reason.split(":", 1)[0].strip()
    if head == "(value)":
        return "invalid_value"
    match = _FIELD_HEAD.match(head)
    if match and match.group(1) in _DLQ_FIELDS:
        return f"invalid_{match.group(1)}"
    return "other"


MOST_TENANT_LABELS = 32  # a bound on the tenant label of the write path's metrics


class Metrics:
    """The metrics of one process, registered on `registry`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        r = registry
        # --- write path: segmenter ------------------------------------------------------
        self.ingested = Counter(
            "memstream_ingested_events",
            "Records consumed from the turns topic, by outcome (turns, session ends, "
            "forgets and clock ticks).",
            ["outcome"],
            registry=r,
        )
        self.l1_latency = Histogram(
            "memstream_l1_latency_seconds",
            "Time from the broker receiving the newest message of an L1 memory (its record "
            "timestamp) to the L1 being stored (observed once per L1 memory).",
            buckets=L1_LATENCY_BUCKETS,
            registry=r,
        )
        self.segmenter_batch = Histogram(
            "memstream_segmenter_batch_seconds",
            "Time the segmenter took to handle one batch of records.",
            buckets=SEGMENTER_BATCH_BUCKETS,
            registry=r,
        )
        self.diverted = Counter(
            "memstream_segmenter_diverted_turns",
            "Turns sent to the overflow topic for being over their tenant's share of the "
            "segmenter, by tenant ('default': ids outside every tenant; past the first "
            f"{MOST_TENANT_LABELS} tenants seen, 'other').",
            ["tenant"],
            registry=r,
        )
        self.overflow_lag = Gauge(
            "memstream_segmenter_overflow_lag_seconds",
            "Age, in the turns topic's broker time, of the newest record the segmenter last "
            "committed from the overflow topic: how far behind a tenant over its share is.",
            registry=r,
        )
        self.windows_closed = Counter(
            "memstream_windows_closed",
            "Windows closed by the segmenter, by level and reason.",
            ["level", "reason"],
            registry=r,
        )
        self.dlq_events = Counter(
            "memstream_dlq_events",
            "Events sent to the dead-letter topic, by reason category.",
            ["reason"],
            registry=r,
        )
        self.handler_failures = Counter(
            "memstream_handler_failures",
            "Batches whose handler raised (the agent restarts; see docs/operations.md).",
            ["handler"],
            registry=r,
        )
        # --- write path: consolidator ---------------------------------------------------
        self.consolidation_lag = Histogram(
            "memstream_consolidation_lag_seconds",
            "Time from a window's closure being published to its L2-L5 node being written.",
            ["level"],
            buckets=CONSOLIDATION_LAG_BUCKETS,
            registry=r,
        )
        self.consolidations = Counter(
            "memstream_consolidations",
            "Closures handled by the consolidator, by level and result.",
            ["level", "result"],
            registry=r,
        )
        # --- backlog, collected periodically by one process ----------------------------
        self.windows_pending = Gauge(
            "memstream_windows_pending",
            "Windows open in the segmenter's state (collecting children, not yet closed).",
            ["level"],
            registry=r,
        )
        self.rebuild_pending_windows = Gauge(
            "memstream_rebuild_pending_windows",
            "Windows that running rebuilds have still to consolidate again (every window of "
            "a rebuild whose leaves are not all re-derived yet).",
            registry=r,
        )
        self.store_divergence = Gauge(
            "memstream_store_divergence",
            "How the tree (Redis) and the index (Qdrant) disagree, by kind: index_empty and "
            "tree_empty are 1 while one store is empty beside the other; users_differing counts "
            "the sampled users whose nodes per level differ (docs/repair.md).",
            ["kind"],
            registry=r,
        )
        for kind in DIVERGENCE_KINDS:
            self.store_divergence.labels(kind)  # at zero until a check finds otherwise
        self.consumer_lag = Gauge(
            "memstream_consumer_lag_messages",
            "Records a consumer group has not yet committed, by topic and partition.",
            ["group", "topic", "partition"],
            registry=r,
        )
        self.store_errors = Counter(
            "memstream_store_errors",
            "Redis commands that failed (the tree's writes, its reads across users and the "
            "readiness probe), by store and kind (moved, ask, crossslot, cluster_down, ...).",
            ["store", "kind"],
            registry=r,
        )
        self.collector_errors = Counter(
            "memstream_collector_errors",
            "Failed runs of a periodic collector (the gauges keep their last values).",
            ["collector"],
            registry=r,
        )
        # --- LLM ------------------------------------------------------------------------
        self.llm_requests = Counter(
            "memstream_llm_requests",
            "HTTP attempts to the LLM endpoint (retries included), by operation.",
            ["operation"],
            registry=r,
        )
        self.llm_errors = Counter(
            "memstream_llm_errors",
            "Failed LLM attempts, by operation and error kind.",
            ["operation", "error"],
            registry=r,
        )
        self.llm_tokens = Counter(
            "memstream_llm_tokens",
            "Tokens the LLM endpoint reported, by operation and kind (prompt, completion).",
            ["operation", "kind"],
            registry=r,
        )
        self.llm_latency = Histogram(
            "memstream_llm_request_seconds",
            "Duration of one LLM attempt, by operation.",
            ["operation"],
            buckets=LLM_LATENCY_BUCKETS,
            registry=r,
        )
        self.llm_fallbacks = Counter(
            "memstream_llm_fallbacks",
            "Calls answered by the offline backend after the LLM failed (nodes marked degraded).",
            ["operation"],
            registry=r,
        )
        # --- recall (observed by the recall API) ----------------------------------------
        self.recall_requests = Counter(
            "memstream_recall_requests",
            "Recall requests, by HTTP status code.",
            ["status"],
            registry=r,
        )
        self.recall_latency = Histogram(
            "memstream_recall_request_seconds",
            "Duration of a whole recall request.",
            buckets=RECALL_LATENCY_BUCKETS,
            registry=r,
        )
        self.recall_stage_latency = Histogram(
            "memstream_recall_stage_seconds",
            "Duration of one recall stage (as in the response's timings_ms, without total).",
            ["stage"],
            buckets=RECALL_LATENCY_BUCKETS,
            registry=r,
        )
        # --- every HTTP route (observed by the recall API) -------------------------------
        self.http_requests = Counter(
            "memstream_http_requests",
            "HTTP requests answered, by route template (as in the OpenAPI spec), method and "
            "status code; requests no route matched share one route label.",
            ["route", "method", "status"],
            registry=r,
        )
        self.http_latency = Histogram(
            "memstream_http_request_seconds",
            "Time to answer one HTTP request, by route template and method.",
            ["route", "method"],
            buckets=HTTP_LATENCY_BUCKETS,
            registry=r,
        )
        # --- tenants: keys, rates, the audit trail ---------------------------------------
        self.key_file_reloads = Counter(
            "memstream_api_key_file_reloads",
            "Reads of the API's key file, by outcome: loaded (start-up), reloaded (a change "
            "served), refused (a bad file; the previous keys stay in force).",
            ["outcome"],
            registry=r,
        )
        self.tenant_rate_limited = Counter(
            "memstream_api_rate_limited",
            "Requests refused with 429 for being over their tenant's rate, by tenant (only "
            "tenants of the key file: a bounded set).",
            ["tenant"],
            registry=r,
        )
        self.audit_failures = Counter(
            "memstream_audit_failures",
            "Audit records that could not be published (the operation itself went ahead).",
            registry=r,
        )
        self._create_known_series()

    def _create_known_series(self) -> None:
        for outcome in KEY_FILE_OUTCOMES:
            self.key_file_reloads.labels(outcome)
        for outcome in INGEST_OUTCOMES:
            self.ingested.labels(outcome)
        for handler in ("segmenter", "consolidator"):
            self.handler_failures.labels(handler)
        for kind in STORE_ERROR_KINDS:
            self.store_errors.labels("redis", kind)
        for reason in DLQ_REASONS:
            self.dlq_events.labels(reason)
        for level in CONSOLIDATED_LEVELS:
            self.consolidation_lag.labels(level)
            self.windows_pending.labels(level)
            for result in CONSOLIDATION_RESULTS:
                self.consolidations.labels(level, result)
            for reason in CLOSURE_REASONS:
                self.windows_closed.labels(level, reason)
