"""Metrics declarations and the glue that feeds them, without a broker or stores."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fastapi import APIRouter, FastAPI
from prometheus_client import CollectorRegistry
from tests.unit.fakes import FakeTree

from memstream.consolidator.handler import Outcome
from memstream.contracts.records import Consumed, RawEvent
from memstream.domain.models import Level, MemoryNode, Window, WindowClosed
from memstream.domain.rebuild import RebuildJob, RebuildPlan
from memstream.edges.instrumentation import (
    BacklogCollector,
    HttpMetricsMiddleware,
    InstrumentedConsolidator,
    fallback_hook,
    observe_batch,
    recall_observer,
    usage_hook,
)
from memstream.metrics import DLQ_REASONS, UNMATCHED_ROUTE, Metrics, dlq_category
from memstream.ports import UserCommit
from memstream.recall.pipeline import RecallResult
from memstream.segmenter.handler import BatchReport

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2025, 3, 3, tzinfo=UTC)


@pytest.fixture
def metrics() -> Metrics:
    return Metrics(CollectorRegistry())


def value(m: Metrics, name: str, **labels: str) -> float:
    found = m.registry.get_sample_value(name, labels)
    return 0.0 if found is None else found


def closure(level: Level, node_id: str = "n1") -> WindowClosed:
    return WindowClosed(Window("u1", level, T0, T0), "session_end", node_id)


def memory(level: Level) -> MemoryNode:
    return MemoryNode(id="n1", user_id="u1", level=level, t_start=T0, t_end=T0, text="x")


@pytest.mark.parametrize(
    ("reason", "category"),
    [
        ("undecodable event: Expecting value", "undecodable"),
        ("(value): not valid JSON", "invalid_value"),
        ("ts: 'yesterday at noon' is not a 'date-time'", "invalid_ts"),
        ("speaker: missing field; ts: bad", "invalid_speaker"),
        ("metadata.colour: too long", "invalid_metadata"),
        ("source_ids[2]: not a string", "other"),
        ("Surprise: free text from somewhere", "other"),
        ("", "other"),
    ],
)
def test_dlq_reasons_map_to_a_bounded_set(reason: str, category: str) -> None:
    assert dlq_category(reason) == category
    assert category in DLQ_REASONS


def test_every_metric_is_declared_once_per_registry() -> None:
    registry = CollectorRegistry()
    Metrics(registry)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        Metrics(registry)
    Metrics(CollectorRegistry())  # another registry is independent


def test_series_that_alerts_use_exist_at_zero(metrics: Metrics) -> None:
    # increase() needs a sample before the first event: these series start at 0 (not absent).
    sample = metrics.registry.get_sample_value
    assert sample("memstream_dlq_events_total", {"reason": "invalid_ts"}) == 0.0
    assert sample("memstream_consolidation_lag_seconds_count", {"level": "L5"}) == 0.0
    assert sample("memstream_windows_closed_total", {"level": "L2", "reason": "idle"}) == 0.0


def test_a_batch_report_becomes_counts_and_latencies(metrics: Metrics) -> None:
    report = BatchReport(
        events=10,
        duplicates=2,
        segments=[memory(Level.SEGMENT), memory(Level.SEGMENT), memory(Level.SEGMENT)],
        closures=[closure(Level.SESSION), closure(Level.DAY)],
        l1_latencies=[0.2, 0.3, 0.4],
    )
    observe_batch(metrics, report, seconds=0.5)
    assert value(metrics, "memstream_ingested_events_total", outcome="accepted") == 8
    assert value(metrics, "memstream_ingested_events_total", outcome="duplicate") == 2
    assert value(metrics, "memstream_l1_latency_seconds_count") == 3
    assert value(metrics, "memstream_l1_latency_seconds_sum") == pytest.approx(0.9)
    assert value(metrics, "memstream_segmenter_batch_seconds_count") == 1
    assert value(metrics, "memstream_segmenter_batch_seconds_sum") == pytest.approx(0.5)
    closed = "memstream_windows_closed_total"
    assert value(metrics, closed, level="L2", reason="session_end") == 1
    assert value(metrics, closed, level="L3", reason="session_end") == 1


class FakeConsolidator:
    def __init__(self, outcomes: list[Outcome]) -> None:
        self.outcomes = outcomes
        self.handled = 0

    async def handle_records(self, batch: list[Consumed[WindowClosed]]) -> list[Outcome]:
        self.handled += len(batch)
        return self.outcomes


def record(timestamp: float | None) -> Consumed[WindowClosed]:
    return Consumed(closure(Level.SESSION), RawEvent(b"{}", "windows", 0, 0, timestamp))


async def test_consolidation_lag_is_measured_from_each_record_timestamp(metrics: Metrics) -> None:
    session, day, week = closure(Level.SESSION), closure(Level.DAY), closure(Level.WEEK)
    outcomes = [
        Outcome(session, memory(Level.SESSION), None, "fp"),  # written
        Outcome(day, memory(Level.DAY), "unchanged"),  # replay: no lag observed
        Outcome(day, None, "no children"),
        Outcome(week, memory(Level.WEEK), None, "fp"),  # written, but no timestamp known
    ]
    wrapped = InstrumentedConsolidator(
        FakeConsolidator(outcomes),  # type: ignore[arg-type]
        metrics,
        clock=lambda: 1000.0,
    )
    records = [record(940.0), record(990.0), record(995.0), record(None)]
    assert await wrapped.handle_records(records) == outcomes
    assert wrapped.handled == 4
    lag = "memstream_consolidation_lag_seconds"
    assert value(metrics, f"{lag}_count", level="L2") == 1
    assert value(metrics, f"{lag}_sum", level="L2") == 60.0
    assert value(metrics, f"{lag}_bucket", level="L2", le="30.0") == 0
    assert value(metrics, f"{lag}_bucket", level="L2", le="60.0") == 1
    assert value(metrics, f"{lag}_count", level="L3") == 0
    assert value(metrics, f"{lag}_count", level="L4") == 0
    results = "memstream_consolidations_total"
    assert value(metrics, results, level="L2", result="written") == 1
    assert value(metrics, results, level="L3", result="unchanged") == 1
    assert value(metrics, results, level="L3", result="no_children") == 1
    assert value(metrics, results, level="L4", result="written") == 1


async def test_a_failing_handler_is_counted_and_reraised(metrics: Metrics) -> None:
    class Broken(FakeConsolidator):
        async def handle_records(self, batch: list[Consumed[WindowClosed]]) -> list[Outcome]:
            raise RuntimeError("qdrant is down")

    wrapped = InstrumentedConsolidator(Broken([]), metrics)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        await wrapped.handle_records([record(1.0)])
    assert value(metrics, "memstream_handler_failures_total", handler="consolidator") == 1


def test_llm_usage_and_fallbacks(metrics: Metrics) -> None:
    record = usage_hook(metrics)
    record("consolidate_l2", 120, 30, 0.8, None)
    record("consolidate_l2", 0, 0, 5.0, "http_503")
    fallback_hook(metrics)("consolidate_l2", RuntimeError("down"))
    op = {"operation": "consolidate_l2"}
    assert value(metrics, "memstream_llm_requests_total", **op) == 2
    assert value(metrics, "memstream_llm_errors_total", error="http_503", **op) == 1
    assert value(metrics, "memstream_llm_tokens_total", kind="prompt", **op) == 120
    assert value(metrics, "memstream_llm_tokens_total", kind="completion", **op) == 30
    assert value(metrics, "memstream_llm_request_seconds_count", **op) == 2
    assert value(metrics, "memstream_llm_fallbacks_total", **op) == 1


async def test_backlog_collector_sets_lag_and_counts_its_failures(metrics: Metrics) -> None:
    calls: list[tuple[str, list[str]]] = []

    async def lag(bootstrap: str, group: str, topics: Any) -> dict[tuple[str, int], int]:
        calls.append((group, list(topics)))
        if group == "broken":
            raise ConnectionError("broker away")
        return {(topics[0], 0): 7, (topics[0], 1): 0}

    collector = BacklogCollector(
        metrics,
        tree=None,  # type: ignore[arg-type]  # pending windows fail: counted below
        bootstrap="kafka:9092",
        groups={"g-seg": ["turns"]},
        lag_reader=lag,
    )
    await collector.collect_once()
    gauge = "memstream_consumer_lag_messages"
    assert value(metrics, gauge, group="g-seg", topic="turns", partition="0") == 7
    assert value(metrics, gauge, group="g-seg", topic="turns", partition="1") == 0
    errors = "memstream_collector_errors_total"
    assert value(metrics, errors, collector="windows_pending") == 1
    assert value(metrics, errors, collector="consumer_lag") == 0


async def test_backlog_collector_sets_the_rebuilds_pending_windows(metrics: Metrics) -> None:
    tree = FakeTree()
    for user, windows in (("ana", ("w1", "w2")), ("bo", ("w3",))):
        job = RebuildJob(
            "r1", None, None, tuple(Level), 1, len(windows), plan=RebuildPlan(("l1",), windows)
        )
        await tree.commit_user(
            UserCommit(user, state={}, seen={}, nodes=[], outbox=[], due=None, rebuild=job)
        )

    async def no_lag(bootstrap: str, group: str, topics: Any) -> dict[tuple[str, int], int]:
        return {}

    collector = BacklogCollector(
        metrics, tree=tree, bootstrap="kafka:9092", groups={}, lag_reader=no_lag
    )
    await collector.collect_once()
    assert value(metrics, "memstream_rebuild_pending_windows") == 3
    assert (
        value(metrics, "memstream_collector_errors_total", collector="rebuild_pending_windows") == 0
    )


async def test_http_middleware_counts_every_route_by_template(metrics: Metrics) -> None:
    app = FastAPI()

    @app.get("/users/{user_id}")
    async def user(user_id: str) -> dict[str, str]:
        return {"user_id": user_id}

    router = APIRouter()  # an included router, as the recall API's

    @router.post("/v1/recall")
    async def recall() -> dict[str, str]:
        return {}

    app.include_router(router)

    app.add_middleware(HttpMetricsMiddleware, metrics=metrics)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        for n in range(3):
            await client.get(f"/users/u{n}")
        await client.delete("/users/u0")  # 405: still the route's template
        await client.request("BREW", "/nowhere/at/all")
        await client.post("/v1/recall")
        await client.post("/v1/recall")

    requests = "memstream_http_requests_total"
    assert value(metrics, requests, route="/users/{user_id}", method="GET", status="200") == 3
    assert value(metrics, requests, route="/users/{user_id}", method="DELETE", status="405") == 1
    assert value(metrics, requests, route=UNMATCHED_ROUTE, method="other", status="404") == 1
    seconds = "memstream_http_request_seconds_count"
    assert value(metrics, seconds, route="/users/{user_id}", method="GET") == 3
    # Raw paths never become labels.
    labelled = metrics.registry.collect()
    routes = {s.labels["route"] for f in labelled for s in f.samples if "route" in s.labels}
    assert routes <= {*app.openapi()["paths"], UNMATCHED_ROUTE}
    assert value(metrics, requests, route="/v1/recall", method="POST", status="500") == 0
    # The recall route keeps its own series, which the latency alert reads.
    assert value(metrics, "memstream_recall_requests_total", status="200") == 2
    assert value(metrics, "memstream_recall_request_seconds_count") == 2
    assert value(metrics, requests, route="/v1/recall", method="POST", status="200") == 2


def test_recall_stages_are_timed_on_every_recall(metrics: Metrics) -> None:
    record = recall_observer(metrics)
    for search_ms in (4.0, 6.0):
        record(
            RecallResult(
                complexity="simple",
                keywords=(),
                memories=[],
                tokens=0,
                timings_ms={"search": search_ms, "embed": 1.0, "total": 9.0},
                degraded=False,
            )
        )
    stage = "memstream_recall_stage_seconds"
    assert value(metrics, f"{stage}_count", stage="search") == 2
    assert value(metrics, f"{stage}_sum", stage="search") == pytest.approx(0.010)
    assert value(metrics, f"{stage}_count", stage="embed") == 2
    assert value(metrics, f"{stage}_count", stage="total") == 0


# --- the dashboard and the alerts only use metrics that exist --------------------------

_METRIC = re.compile(r"\b(memstream_[a-z0-9_]+)")


def declared_names() -> dict[str, set[str]]:
    """Family name -> the sample names PromQL can use for it."""
    samples = {
        "counter": ("_total",),
        "histogram": ("_bucket", "_count", "_sum"),
        "gauge": ("",),
    }
    families = Metrics(CollectorRegistry()).registry.collect()
    return {f.name: {f.name + suffix for suffix in samples[f.type]} for f in families}


def deployed_expressions() -> list[str]:
    dashboard = json.loads((ROOT / "deploy/grafana/dashboards/memstream.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    rules = yaml.safe_load((ROOT / "deploy/prometheus/alerts.yml").read_text())
    return exprs + [r["expr"] for g in rules["groups"] for r in g["rules"]]


def test_dashboard_and_alerts_name_only_declared_metrics() -> None:
    declared = declared_names()
    used = {name for expr in deployed_expressions() for name in _METRIC.findall(expr)}
    assert used, "no memstream metric found in the dashboard or the rules"
    assert sorted(used - set().union(*declared.values())) == []
    # Every family is on the dashboard or in a rule: a metric nobody sees is one nobody reads.
    unseen = [family for family, names in declared.items() if not names & used]
    assert unseen == []
