"""Recall latency as a client sees it over HTTP: the probe the recall benchmarks share
(`recall_latency` against synthetic trees, `scale` against stores of every size)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

import httpx

from memstream_lab.bench.synthetic import USER
from memstream_lab.measure import ms_since, nearest_rank

WARM_UP = 3
MIN_QUERIES = 10


def measure(
    client: httpx.Client, asks: Sequence[str], seconds: float, user: str = USER
) -> dict[str, Any]:
    for query in asks[:WARM_UP]:
        client.post("/v1/recall", json={"user_id": user, "query": query}).raise_for_status()
    latencies: list[float] = []
    stages: dict[str, list[float]] = {}
    complexities: dict[str, int] = {}
    deadline = time.perf_counter() + seconds
    for query in asks:
        if len(latencies) >= MIN_QUERIES and time.perf_counter() > deadline:
            break
        body = _ask(client, query, latencies, user=user)
        complexities[body["complexity"]] = complexities.get(body["complexity"], 0) + 1
        for stage, ms in body["timings_ms"].items():
            stages.setdefault(stage, []).append(ms)
    return _summary(latencies, complexities, stages)


def measure_explained(client: httpx.Client, asks: Sequence[str], seconds: float) -> dict[str, Any]:
    """Plain and explained recall of the same queries, in turn, and the ratio of their
    latencies (explained over plain)."""
    for query in asks[:WARM_UP]:
        for explain in (False, True):
            _ask(client, query, [], explain)
    plain: list[float] = []
    explained: list[float] = []
    deadline = time.perf_counter() + seconds
    for i, query in enumerate(asks):
        if len(plain) >= MIN_QUERIES and time.perf_counter() > deadline:
            break
        for explain in (i % 2 == 1, i % 2 == 0):
            trace = _ask(client, query, explained if explain else plain, explain).get("trace")
            assert (trace is not None) == explain, "the server ignored `explain`"
    figures = {"plain": _summary(plain), "explained": _summary(explained)}
    for stat in ("p50_ms", "p95_ms", "mean_ms"):
        ratio = figures["explained"][stat] / figures["plain"][stat]
        figures[f"ratio_{stat.removesuffix('_ms')}"] = round(ratio, 3)
    return figures


def _ask(
    client: httpx.Client,
    query: str,
    latencies: list[float],
    explain: bool = False,
    user: str = USER,
) -> dict[str, Any]:
    body: dict[str, Any] = {"user_id": user, "query": query}
    if explain:
        body["explain"] = True
    began = time.perf_counter()
    reply = client.post("/v1/recall", json=body)
    latencies.append(ms_since(began))
    reply.raise_for_status()
    answer: dict[str, Any] = reply.json()
    return answer


def _summary(
    latencies: list[float],
    complexities: dict[str, int] | None = None,
    stages: dict[str, list[float]] | None = None,
) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "p50_ms": round(nearest_rank(latencies, 50), 2),
        "p95_ms": round(nearest_rank(latencies, 95), 2),
        "mean_ms": round(statistics.fmean(latencies), 2),
        "requests": len(latencies),
    }
    if complexities is not None:
        summary["complexities"] = complexities
    if stages is not None:
        summary["server_stage_p50_ms"] = {
            s: round(nearest_rank(v, 50), 2) for s, v in sorted(stages.items())
        }
    return summary
