"""The scheduler's collector turns the divergence check into `memstream_store_divergence`."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry
from tests.unit.fakes import FakeIndex, FakeTree, sample_tree

from memstream.domain.divergence import Divergence
from memstream.edges.instrumentation import BacklogCollector
from memstream.metrics import Metrics
from memstream.repair.divergence import check_stores


async def no_lag(bootstrap: str, group: str, topics: Any) -> dict[tuple[str, int], int]:
    return {}


def gauge(metrics: Metrics, kind: str) -> float | None:
    return metrics.registry.get_sample_value("memstream_store_divergence", {"kind": kind})


async def test_the_gauge_starts_at_zero_and_follows_each_check() -> None:
    metrics = Metrics(CollectorRegistry())
    assert [gauge(metrics, k) for k in ("index_empty", "tree_empty", "users_differing")] == [
        0.0,
        0.0,
        0.0,
    ]
    tree = FakeTree(sample_tree("u1"))
    index = FakeIndex(tree)
    lost_index = FakeIndex(FakeTree())  # an index that holds nothing
    checks = iter([check_stores(tree, index, 5), check_stores(tree, lost_index, 5)])

    async def check() -> Divergence:
        return await next(checks)

    collector = BacklogCollector(
        metrics, tree=tree, bootstrap="kafka:9092", groups={}, lag_reader=no_lag, divergence=check
    )
    await collector.collect_once()
    assert gauge(metrics, "index_empty") == 0.0 and gauge(metrics, "users_differing") == 0.0
    await collector.collect_once()
    assert gauge(metrics, "index_empty") == 1.0 and gauge(metrics, "users_differing") == 1.0
    errors = "memstream_collector_errors_total"
    assert metrics.registry.get_sample_value(errors, {"collector": "store_divergence"}) is None
