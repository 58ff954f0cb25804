"""The HTTP API over in-memory stores: auth, validation, browsing, forgetting, operations."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from pydantic import SecretStr
from redis.exceptions import ConnectionError as RedisConnectionError
from tests.unit.fakes import FakePublisher, FakeTree, fake_container, sample_tree

from memstream.bootstrap import recall_app
from memstream.settings import Settings

KEY = "test-key-1"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture
def publisher() -> FakePublisher:
    return FakePublisher()


@asynccontextmanager
async def serving(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://test") as client,
    ):
        yield client


@pytest.fixture
async def client(publisher: FakePublisher) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(
        recall_api_keys=[SecretStr("other-key"), SecretStr(KEY)],
        recall_max_query_chars=50,
        recall_max_tokens_limit=500,
    )
    container = fake_container(settings, FakeTree(sample_tree("u1")), publisher=publisher)
    async with serving(recall_app(container)) as test_client:
        yield test_client


async def test_recall_answers_with_memories_tokens_and_timings(client: httpx.AsyncClient) -> None:
    reply = await client.post(
        "/v1/recall", json={"user_id": "u1", "query": "q", "complexity": "hybrid"}, headers=AUTH
    )
    assert reply.status_code == 200
    body = reply.json()
    assert body["complexity"] == "hybrid"
    assert {m["level"] for m in body["memories"]} == {1, 2, 3, 5}
    first = body["memories"][0]
    assert set(first) >= {"id", "level", "t_start", "t_end", "text", "score", "source_ids"}
    assert body["tokens"] > 0 and body["timings_ms"]["total"] > 0


@pytest.mark.parametrize(
    "headers", [None, {"Authorization": "Bearer nope"}, {"Authorization": f"Basic {KEY}"}]
)
async def test_a_missing_or_wrong_key_gets_401(
    client: httpx.AsyncClient, headers: dict[str, str] | None
) -> None:
    reply = await client.post("/v1/recall", json={"user_id": "u1", "query": "q"}, headers=headers)
    assert reply.status_code == 401
    assert reply.headers["www-authenticate"] == "Bearer"
    assert (await client.get("/v1/users/u1/profile", headers=headers)).status_code == 401


async def test_probes_and_metrics_need_no_key(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    assert (await client.get("/readyz")).json() == {
        "status": "ok",
        "checks": {"redis": True, "qdrant": True, "stores_agree": True},
        "reasons": {},
    }
    assert (await client.get("/metrics")).status_code == 200
    assert "openapi" in (await client.get("/openapi.json")).json()


async def test_readiness_names_why_a_store_is_not_ready() -> None:
    from memstream.adapters.redis.errors import StoreRefused

    class RedirectedTree(FakeTree):
        async def ping(self) -> bool:
            raise StoreRefused("moved", "MOVED 3999 127.0.0.1:7001")

    settings = Settings(recall_api_keys=[SecretStr(KEY)])
    async with serving(recall_app(fake_container(settings, RedirectedTree()))) as client:
        reply = await client.get("/readyz")
    assert reply.status_code == 503
    assert reply.json() == {
        "status": "unavailable",
        "checks": {"redis": False, "qdrant": True, "stores_agree": True},
        "reasons": {"redis": "moved: MOVED 3999 127.0.0.1:7001"},
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": "x" * 51}, "query"),
        ({"query": ""}, "query"),
        ({"max_tokens": 501}, "max_tokens"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"complexity": "deep"}, "complexity"),
        ({"user_id": "a b"}, "user_id"),
        ({"query_time": "2024-03-04T10:00:00"}, "query_time"),
        ({"extra": 1}, "extra"),
        # JSON's own types only: pydantic alone took these as 5 and as true.
        ({"max_tokens": "5"}, "max_tokens"),
        ({"max_tokens": True}, "max_tokens"),
        ({"with_derivation": "yes"}, "with_derivation"),
        ({"with_derivation": 1}, "with_derivation"),
    ],
)
async def test_bad_input_gets_422_naming_the_field(
    client: httpx.AsyncClient, body: dict[str, object], field: str
) -> None:
    reply = await client.post(
        "/v1/recall", json={"user_id": "u1", "query": "q"} | body, headers=AUTH
    )
    assert reply.status_code == 422
    assert [field] == [e["loc"][-1] for e in reply.json()["detail"]]


async def test_an_integer_may_be_written_with_a_zero_fraction(client: httpx.AsyncClient) -> None:
    # JSON Schema's integer is any number without a fraction: 100.0 is one, 100.5 is not.
    body = {"user_id": "u1", "query": "q"}
    whole = await client.post("/v1/recall", json=body | {"max_tokens": 100.0}, headers=AUTH)
    assert whole.status_code == 200
    part = await client.post("/v1/recall", json=body | {"max_tokens": 100.5}, headers=AUTH)
    assert part.status_code == 422


async def test_an_unknown_user_gets_empty_answers(client: httpx.AsyncClient) -> None:
    reply = await client.post("/v1/recall", json={"user_id": "ghost", "query": "q"}, headers=AUTH)
    assert reply.status_code == 200 and reply.json()["memories"] == []
    nothing_pending = {"pending": False, "pending_reason": None, "held_messages": []}
    assert (await client.get("/v1/users/ghost/profile", headers=AUTH)).json() == {
        "user_id": "ghost",
        "profile": None,
        **nothing_pending,
    }
    page = (await client.get("/v1/users/ghost/memories", headers=AUTH)).json()
    assert page == {"user_id": "ghost", "items": [], "next_cursor": None, **nothing_pending}
    assert (
        await client.get("/v1/memories/u1-m", params={"user_id": "ghost"}, headers=AUTH)
    ).status_code == 404


async def test_profile_is_the_latest_l5(client: httpx.AsyncClient) -> None:
    body = (await client.get("/v1/users/u1/profile", headers=AUTH)).json()
    assert body["profile"]["id"] == "u1-m" and body["profile"]["level"] == 5


async def test_memories_page_through_every_level_with_a_cursor(client: httpx.AsyncClient) -> None:
    seen: list[str] = []
    cursor = None
    for _ in range(20):
        params = {"limit": 7} | ({"cursor": cursor} if cursor else {})
        page = (await client.get("/v1/users/u1/memories", params=params, headers=AUTH)).json()
        seen += [m["id"] for m in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == len(sample_tree("u1"))
    levels = [int(i.split("-")[1][0] == "l") for i in seen]
    assert levels[:24] == [1] * 24  # L1 first


async def test_memories_filter_by_level_and_time(client: httpx.AsyncClient) -> None:
    params = {"level": 2, "start": "2024-03-11T00:00:00Z", "end": "2024-03-11T23:59:59Z"}
    page = (await client.get("/v1/users/u1/memories", params=params, headers=AUTH)).json()
    assert [m["id"] for m in page["items"]] == ["u1-s100", "u1-s101"]


def _b64(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


FORGED_CURSORS = [
    "garbage!",  # not base64
    _b64("not json"),
    _b64('{"l":9,"o":0}'),  # no such level
    _b64('{"l":1,"o":1e30}'),  # a float, and beyond any store's offsets
    _b64('{"l":1,"o":100000000000000000000}'),  # an int beyond any store's offsets
    _b64('{"l":1,"o":-1}'),
    _b64('{"l":1,"o":1.5}'),
    _b64('{"l":"1","o":0}'),
    _b64('{"l":true,"o":0}'),
    _b64('{"l":1,"o":Infinity}'),
    _b64('{"l":1,"o":NaN}'),
    _b64('{"l":1}'),
    _b64('{"l":1,"o":0,"x":0}'),
    _b64("[1, 0]"),
    _b64('"l"'),
    _b64("[" * 150),
]


@pytest.mark.parametrize("cursor", FORGED_CURSORS)
async def test_a_forged_cursor_gets_422_naming_it(client: httpx.AsyncClient, cursor: str) -> None:
    reply = await client.get("/v1/users/u1/memories", params={"cursor": cursor}, headers=AUTH)
    assert reply.status_code == 422
    assert reply.json()["detail"][0]["loc"] == ["query", "cursor"]


def test_no_cursor_string_gets_a_5xx() -> None:
    settings = Settings(recall_api_keys=[SecretStr(KEY)])
    app = recall_app(fake_container(settings, FakeTree(sample_tree("u1"))))
    with asyncio.Runner() as runner:
        opened = serving(app)
        client = runner.run(opened.__aenter__())

        # Hypothesis drives the examples; the app keeps one loop and one lifespan for all.
        @hyp_settings(max_examples=300, deadline=None)
        @given(
            cursor=st.one_of(
                st.text(max_size=200),
                st.builds(_b64, st.text(max_size=100)),
                st.builds(
                    lambda doc: _b64(json.dumps(doc)),
                    st.dictionaries(
                        st.sampled_from(["l", "o"]),
                        st.one_of(st.integers(), st.floats(), st.text(max_size=3), st.none()),
                    ),
                ),
            )
        )
        def check(cursor: str) -> None:
            params = {"cursor": cursor}
            reply = runner.run(client.get("/v1/users/u1/memories", params=params, headers=AUTH))
            assert reply.status_code < 500, (cursor, reply.text)

        try:
            check()
        finally:
            runner.run(opened.__aexit__(None, None, None))


async def test_a_memory_comes_with_children_and_provenance(client: httpx.AsyncClient) -> None:
    body = (await client.get("/v1/memories/u1-s000", params={"user_id": "u1"}, headers=AUTH)).json()
    assert [c["id"] for c in body["children"]] == ["u1-l0000", "u1-l0001", "u1-l0002"]
    assert [a["id"] for a in body["ancestors"]] == ["u1-d00", "u1-w0", "u1-m"]
    assert body["source_ids"] == ["msg-u1-l0000", "msg-u1-l0001", "msg-u1-l0002"]
    missing = await client.get("/v1/memories/u1-s000", headers=AUTH)
    assert missing.status_code == 422 and missing.json()["detail"][0]["loc"] == ["query", "user_id"]


async def test_delete_forgets_the_user_and_publishes_forget(
    client: httpx.AsyncClient, publisher: FakePublisher
) -> None:
    reply = await client.delete("/v1/users/u1", headers=AUTH)
    assert reply.status_code == 200
    body = reply.json()
    assert body["redis_keys"] == len(sample_tree("u1")) and body["forget_event_published"]
    [event] = publisher.commands
    assert (event.topic, event.key, event.value) == (
        "memstream.turns.v1",
        "u1",
        {"type": "forget.v1", "user_id": "u1"},
    )
    assert (await client.get("/v1/users/u1/profile", headers=AUTH)).json()["profile"] is None


async def test_delete_reports_an_unpublished_forget_as_503() -> None:
    settings = Settings(recall_auth_disabled=True)
    container = fake_container(
        settings, FakeTree(sample_tree("u1")), publisher=FakePublisher(fail=True)
    )
    async with serving(recall_app(container)) as client:
        reply = await client.delete("/v1/users/u1")
    assert reply.status_code == 503 and "retry" in reply.json()["detail"]


async def test_with_auth_explicitly_disabled_the_api_is_open_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    container = fake_container(Settings(recall_auth_disabled=True), FakeTree(sample_tree("u1")))
    with caplog.at_level(logging.WARNING):
        app = recall_app(container)
    assert any(
        r.levelno == logging.WARNING and "AUTHENTICATION IS DISABLED" in r.getMessage()
        for r in caplog.records
    )
    async with serving(app) as client:
        reply = await client.post("/v1/recall", json={"user_id": "u1", "query": "q"})
        assert reply.status_code == 200


def test_without_keys_or_the_opt_out_the_api_refuses_to_start() -> None:
    container = fake_container(Settings(), FakeTree(sample_tree("u1")))
    with pytest.raises(ValueError, match="MEMSTREAM_RECALL_API_KEYS") as refused:
        recall_app(container)
    assert "MEMSTREAM_RECALL_AUTH_DISABLED" in str(refused.value)


async def test_a_configured_key_applies_even_with_the_opt_out() -> None:
    settings = Settings(recall_api_keys=[SecretStr(KEY)], recall_auth_disabled=True)
    async with serving(recall_app(fake_container(settings, FakeTree()))) as client:
        body = {"user_id": "u1", "query": "q"}
        assert (await client.post("/v1/recall", json=body)).status_code == 401
        assert (await client.post("/v1/recall", json=body, headers=AUTH)).status_code == 200


async def test_the_spec_states_the_configured_limits(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/openapi.json")).json()
    body = spec["components"]["schemas"]["RecallRequestBody"]["properties"]
    assert body["query"]["maxLength"] == 50
    assert body["max_tokens"]["anyOf"][0]["maximum"] == 500


async def test_a_store_failure_is_a_503_not_a_500() -> None:
    container = fake_container(Settings(recall_auth_disabled=True), FakeTree(sample_tree("u1")))

    async def unreachable(*args: object, **kwargs: object) -> None:
        raise RedisConnectionError("connection refused")

    container.index.search_leaves = unreachable  # type: ignore[method-assign]
    async with serving(recall_app(container)) as client:
        reply = await client.post("/v1/recall", json={"user_id": "u1", "query": "q"})
    assert reply.status_code == 503
