"""What runs on a timer logs a change of state once, not every time it runs."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry

from memstream.domain.models import Level
from memstream.edges.instrumentation import BacklogCollector
from memstream.edges.probes import serve_probes
from memstream.metrics import Metrics


class _OpenWindows:
    """Answers `open_window_counts` from a script, one answer a collection."""

    def __init__(self, *answers: int) -> None:
        self._answers = list(answers)

    async def open_window_counts(self) -> Counter[int]:
        return Counter({int(Level.SEGMENT): self._answers.pop(0)})


async def _get(url: str) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.get(url)


def _warnings(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if text in r.getMessage() and r.levelno >= logging.WARNING]


async def test_open_leaves_are_logged_when_their_count_changes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tree: Any = _OpenWindows(2, 2, 2, 3, 0, 0)
    collector = BacklogCollector(
        Metrics(CollectorRegistry()), tree=tree, bootstrap="kafka:9092", groups={}
    )
    with caplog.at_level(logging.INFO, logger="memstream.edges.instrumentation"):
        for _ in range(6):
            await collector.collect_pending()
    said = [r.getMessage() for r in caplog.records if "open L1 windows" in r.getMessage()]
    assert said == [
        "open L1 windows in the state: 2",
        "open L1 windows in the state: 3",
        "no open L1 windows in the state any more",
    ]


async def test_a_failing_readiness_probe_warns_once_and_says_when_it_recovers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    answers = [RuntimeError("redis away")] * 4 + [True]

    async def ready() -> bool:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    with caplog.at_level(logging.DEBUG, logger="memstream.edges.probes"):
        async with serve_probes(CollectorRegistry(), 0, host="127.0.0.1", ready=ready) as port:
            url = f"http://127.0.0.1:{port}/readyz"
            codes = [(await _get(url)).status_code for _ in range(5)]
    assert codes == [503, 503, 503, 503, 200]
    assert len(_warnings(caplog, "readiness check failed")) == 1
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG]
    assert len([r for r in debug if "readiness check failed" in r.getMessage()]) == 3
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == [
        "readiness check answers again"
    ]
