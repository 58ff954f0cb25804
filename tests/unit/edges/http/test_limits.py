"""The API's limits before work (issue 15): body size before auth and before reading,
auth before reading, answers that never echo the input, and any Unicode refused cleanly."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from pydantic import SecretStr
from tests.unit.edges.http.test_api import AUTH, KEY, serving
from tests.unit.fakes import FakeTree, fake_container, sample_tree

from memstream.bootstrap import recall_app
from memstream.metrics import UNMATCHED_ROUTE, Metrics
from memstream.settings import Settings

LIMIT = 4096


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(recall_api_keys=[SecretStr(KEY)], api_max_body_bytes=LIMIT)
    async with serving(recall_app(fake_container(settings, FakeTree(sample_tree("u1"))))) as c:
        yield c


class Trickle:
    """A request body sent in chunks (so without Content-Length), counting what was pulled."""

    def __init__(self, total: int, chunk: int = 1024) -> None:
        self.total, self.chunk, self.pulled = total, chunk, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while self.pulled < self.total:
            self.pulled += self.chunk
            yield b" " * self.chunk


async def test_a_declared_oversize_body_gets_413_before_auth_and_unread(
    client: httpx.AsyncClient,
) -> None:
    body = json.dumps({"user_id": "u1", "query": "x" * 10 * LIMIT})
    for headers in (AUTH, {}):  # the size is refused first, with or without a key
        reply = await client.post("/v1/recall", content=body, headers=headers)
        assert reply.status_code == 413
        assert reply.json() == {"detail": f"request body over {LIMIT} bytes"}


async def test_a_chunked_body_is_cut_off_at_the_limit(client: httpx.AsyncClient) -> None:
    body = Trickle(total=1000 * LIMIT)
    reply = await client.post("/v1/recall", content=body, headers=AUTH)
    assert reply.status_code == 413
    assert body.pulled <= LIMIT + body.chunk  # not the megabytes that were on offer


async def test_without_a_key_the_body_is_never_read(client: httpx.AsyncClient) -> None:
    body = Trickle(total=2 * LIMIT)
    reply = await client.post("/v1/recall", content=body, headers={"Authorization": "Bearer x"})
    assert reply.status_code == 401 and reply.headers["www-authenticate"] == "Bearer"
    assert body.pulled <= body.chunk


async def test_a_body_under_the_limit_is_served(client: httpx.AsyncClient) -> None:
    padded = json.dumps({"user_id": "u1", "query": "q"}) + " " * (LIMIT - 100)
    reply = await client.post(
        "/v1/recall", content=padded, headers=AUTH | {"content-type": "application/json"}
    )
    assert reply.status_code == 200


async def test_a_validation_error_names_the_field_without_echoing_it() -> None:
    # Bodies up to the default limit: a query 30 times the allowed length.
    settings = Settings(recall_api_keys=[SecretStr(KEY)], recall_max_query_chars=2000)
    async with serving(recall_app(fake_container(settings, FakeTree()))) as client:
        reply = await client.post(
            "/v1/recall", json={"user_id": "u1", "query": "x" * 60_000}, headers=AUTH
        )
        assert reply.status_code == 422
        assert len(reply.content) < 1000
        [error] = reply.json()["detail"]
        assert error["loc"] == ["body", "query"] and "input" not in error
        # A huge unknown field name is shortened where the error names it.
        reply = await client.post(
            "/v1/recall", json={"user_id": "u1", "query": "q", "k" * 50_000: 1}, headers=AUTH
        )
        assert reply.status_code == 422 and len(reply.content) < 1000


def _raw(fields: dict[str, str]) -> str:
    """JSON text with `\\ud800` escapes left for the server's parser (json.dumps of a
    surrogate writes the same escape)."""
    return json.dumps({"user_id": "u1", "query": "q"} | fields)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"user_id": "u\ud800"}, "user_id"),
        ({"query": "what \udfff happened"}, "query"),
        ({"complexity": "\ud800"}, "complexity"),
        ({"query_time": "2024-01-01T00:00:00Z\ud800"}, "query_time"),
        ({"\ud800": "x"}, "body"),  # a field name that is no string
    ],
)
async def test_a_lone_surrogate_in_any_field_gets_422(
    client: httpx.AsyncClient, fields: dict[str, str], field: str
) -> None:
    reply = await client.post(
        "/v1/recall",
        content=_raw(fields),
        headers=AUTH | {"content-type": "application/json"},
    )
    assert reply.status_code == 422, reply.text
    assert [e["loc"][-1] for e in reply.json()["detail"]] == [field]


@pytest.mark.parametrize("value", [1714550400, 1714550400.5, "1714550400", "2024-05-01", True])
async def test_a_date_time_is_an_rfc3339_string_only(client: httpx.AsyncClient, value: Any) -> None:
    body = {"user_id": "u1", "query": "q", "query_time": value}
    reply = await client.post("/v1/recall", json=body, headers=AUTH)
    assert reply.status_code == 422
    assert reply.json()["detail"][0]["loc"] == ["body", "query_time"]
    if isinstance(value, str | int) and not isinstance(value, bool):
        page = await client.get("/v1/users/u1/memories", params={"start": value}, headers=AUTH)
        assert page.status_code == 422
        assert page.json()["detail"][0]["loc"] == ["query", "start"]


@pytest.mark.parametrize(
    "query_time",
    [
        "9999-12-31T23:59:59-14:00",
        "9999-12-31T23:59:59.999999-23:59",
        "0001-01-01T00:00:00+23:59",
        "9999-12-31T12:00:00Z",
        "0001-06-01T00:00:00Z",
    ],
)
@pytest.mark.parametrize("query", ["what did we do yesterday?", "what changed last year?"])
async def test_query_times_at_the_ends_of_the_calendar_are_answered(
    client: httpx.AsyncClient, query_time: str, query: str
) -> None:
    body = {"user_id": "u1", "query": query, "query_time": query_time}
    reply = await client.post("/v1/recall", json=body, headers=AUTH)
    assert reply.status_code == 200, reply.text


@pytest.mark.parametrize("user_id", [".", "..", "a/b", "a b", "{a}", "a\u00a0b", "\ufeffa"])
async def test_user_ids_the_routes_cannot_address_are_refused(
    client: httpx.AsyncClient, user_id: str
) -> None:
    reply = await client.post("/v1/recall", json={"user_id": user_id, "query": "q"}, headers=AUTH)
    assert reply.status_code == 422
    assert reply.json()["detail"][0]["loc"] == ["body", "user_id"]
    detail = await client.get("/v1/memories/u1-m", params={"user_id": user_id}, headers=AUTH)
    assert detail.status_code == 422


@pytest.mark.parametrize(
    "path", ["/v1/users/a%2Fb/profile", "/v1/users/x%2fprofile", "/v1/memories/a%2Fb?user_id=u1"]
)
async def test_an_encoded_slash_in_a_path_segment_gets_422(
    client: httpx.AsyncClient, path: str
) -> None:
    # Decoded before routing, it used to reach another route (404, 405) or none.
    reply = await client.get(path, headers=AUTH)
    assert reply.status_code == 422 and reply.json()["detail"][0]["loc"] == ["path"]


async def test_unknown_query_parameters_get_422(client: httpx.AsyncClient) -> None:
    reply = await client.get("/v1/users/u1/memories", params={"limt": 5}, headers=AUTH)
    assert reply.status_code == 422
    assert reply.json()["detail"][0]["loc"] == ["query", "limt"]
    assert (await client.get("/metrics", params={"name[]": "x"})).status_code == 200


async def test_the_served_app_labels_every_answer_by_its_route_template() -> None:
    metrics = Metrics(CollectorRegistry())
    settings = Settings(recall_api_keys=[SecretStr(KEY)], api_max_body_bytes=LIMIT)
    app = recall_app(fake_container(settings, FakeTree(sample_tree("u1"))), metrics)
    async with serving(app) as client:
        assert (await client.get("/v1/users/u1/profile", headers=AUTH)).status_code == 200
        assert (await client.get("/v1/users/u2/profile")).status_code == 401  # before routing
        body = "x" * 2 * LIMIT
        assert (await client.post("/v1/recall", content=body, headers=AUTH)).status_code == 413
        assert (await client.get("/nowhere")).status_code == 404

    def count(route: str, method: str, status: str) -> float | None:
        labels = {"route": route, "method": method, "status": status}
        return metrics.registry.get_sample_value("memstream_http_requests_total", labels)

    assert count("/v1/users/{user_id}/profile", "GET", "200") == 1
    assert count("/v1/users/{user_id}/profile", "GET", "401") == 1
    assert count("/v1/users/{user_id}/profile", "GET", "500") == 0  # there from the start
    assert count("/v1/recall", "POST", "413") == 1
    assert count(UNMATCHED_ROUTE, "GET", "404") == 1
