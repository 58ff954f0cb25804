"""The scale benchmark's offered load, in its own process, against uvicorn serving a real app
on loopback that answers recall as the API's route does (200 with JSON, 500 for one user)."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from memstream.edges.http.server import BackgroundServer
from memstream_lab.bench import scale_load


def recall_stub(asked: Counter[str]) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/recall")
    async def recall(request: Request) -> JSONResponse:
        body: dict[str, Any] = await request.json()
        asked[body["user_id"]] += 1
        if body["user_id"] == "slow":
            await asyncio.sleep(5)
        if body["user_id"] == "broken":
            return JSONResponse({"detail": "no"}, status_code=500)
        return JSONResponse({"memories": [], "timings_ms": {}})

    return app


# A cut far past the run, so that a loaded machine that starts the generator late still sends
# every request; the cut itself is the last test's.
NO_CUT = 120.0


def test_the_offered_requests_all_leave_spread_over_the_users_named() -> None:
    asked: Counter[str] = Counter()
    with BackgroundServer(recall_stub(asked)) as server:
        users = ["light-0", "light-1"]
        figures = scale_load.measure(server.url, users, rate=40, seconds=1, overrun=NO_CUT)
    assert figures["requests"] == 40
    assert figures["errors"] == 0
    assert asked == Counter({"light-0": 20, "light-1": 20})
    assert 0 < figures["p50_ms"] <= figures["p95_ms"] <= figures["p99_ms"]


def test_an_error_answer_is_counted_not_hidden() -> None:
    asked: Counter[str] = Counter()
    with BackgroundServer(recall_stub(asked)) as server:
        users = ["light-0", "broken"]
        figures = scale_load.measure(server.url, users, rate=20, seconds=1, overrun=NO_CUT)
    assert figures["requests"] == 20
    assert figures["errors"] == 10


def test_a_server_far_behind_the_schedule_is_sent_no_more_and_the_rest_counted() -> None:
    asked: Counter[str] = Counter()
    with BackgroundServer(recall_stub(asked)) as server:
        figures = asyncio.run(scale_load.offered(server.url, ["slow"], 10, 1, connections=2))
    # Two connections, each waiting 5 s for its first answer: past 3 s (OVERRUN) nothing more
    # leaves, and the eight requests left are reported, not queued.
    assert figures["requests"] == 2
    assert figures["unsent"] == 8
    assert figures["p50_ms"] >= 5000


@pytest.mark.parametrize(("rate", "seconds", "users"), [(0, 1, ["u"]), (10, 0, ["u"]), (10, 1, [])])
def test_a_rate_or_time_not_positive_or_no_user_is_refused(
    rate: float, seconds: float, users: list[str]
) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        asyncio.run(scale_load.offered("http://127.0.0.1:9", users, rate, seconds))
