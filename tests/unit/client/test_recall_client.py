"""The recall client retries what may pass (429, 5xx) and nothing else, over real HTTP."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from memstream.client import AsyncRecallClient, RecallClient, RecallError

PROFILE = {"user_id": "ann", "profile": None}


class _Flaky(BaseHTTPRequestHandler):
    """Answers each GET with the next status of `script` (then 200), recording what it saw."""

    script: list[int] = []
    seen: list[dict[str, str]] = []
    arrivals: list[float] = []
    retry_after: str | None = None  # sent with every 429

    def do_GET(self) -> None:
        _Flaky.seen.append({"path": self.path, "auth": self.headers.get("Authorization", "")})
        _Flaky.arrivals.append(time.monotonic())
        status = _Flaky.script.pop(0) if _Flaky.script else 200
        body = json.dumps(PROFILE if status == 200 else {"detail": f"status {status}"}).encode()
        self.send_response(status)
        if status == 429 and _Flaky.retry_after is not None:
            self.send_header("Retry-After", _Flaky.retry_after)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def flaky() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Flaky)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Flaky.seen, _Flaky.arrivals, _Flaky.retry_after = [], [], None
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_429_and_503_are_retried_with_the_key(flaky: str) -> None:
    _Flaky.script = [429, 503]
    with RecallClient(flaky, api_key="k", backoff_s=(0.01, 0.05)) as memory:
        answer = memory.profile("ann")

    assert answer.user_id == "ann" and answer.profile is None
    assert [s["auth"] for s in _Flaky.seen] == ["Bearer k"] * 3
    assert {s["path"] for s in _Flaky.seen} == {"/v1/users/ann/profile"}


def test_a_client_error_is_not_retried(flaky: str) -> None:
    _Flaky.script = [422]
    with RecallClient(flaky, backoff_s=(0.01, 0.05)) as memory, pytest.raises(RecallError) as bad:
        memory.profile("ann")

    assert bad.value.status == 422 and bad.value.detail == "status 422"
    assert len(_Flaky.seen) == 1


async def test_the_async_client_gives_up_after_its_attempts(flaky: str) -> None:
    _Flaky.script = [502, 502, 502]
    async with AsyncRecallClient(flaky, attempts=3, backoff_s=(0.01, 0.05)) as memory:
        with pytest.raises(RecallError) as failed:
            await memory.profile("ann")

    assert failed.value.status == 502 and len(_Flaky.seen) == 3


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_a_429_is_retried_no_sooner_than_its_retry_after(flaky: str, flavour: str) -> None:
    _Flaky.script, _Flaky.retry_after = [429], "1"
    if flavour == "sync":
        with RecallClient(flaky, backoff_s=(0.01, 0.05)) as memory:
            memory.profile("ann")
    else:
        async with AsyncRecallClient(flaky, backoff_s=(0.01, 0.05)) as memory:
            await memory.profile("ann")
    first, second = _Flaky.arrivals
    assert second - first >= 1.0  # the backoff alone would have waited at most 0.02 s


def test_the_retry_after_is_kept_on_the_error(flaky: str) -> None:
    _Flaky.script, _Flaky.retry_after = [429], "7"
    with RecallClient(flaky, attempts=1) as memory, pytest.raises(RecallError) as limited:
        memory.profile("ann")
    assert limited.value.status == 429 and limited.value.retry_after_s == 7.0
