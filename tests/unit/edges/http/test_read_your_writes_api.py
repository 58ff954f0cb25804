"""`after` and `wait_ms` on POST /v1/recall: answered once the writes are in, or pending; a
token that can never be satisfied is refused at once, naming the field."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator

import httpx
import pytest
from pydantic import SecretStr
from tests.unit.edges.http.test_api import AUTH, KEY, serving
from tests.unit.fakes import FakeTree, fake_container, sample_tree

from memstream.bootstrap import recall_app
from memstream.domain.write_token import WritePosition, issue
from memstream.settings import Settings

TOKEN_KEY = "deployment-token-key"
DAY_MS = 24 * 3600 * 1000


def token(offset: int, *, user: str = "u1", key: str = TOKEN_KEY, age_ms: int = 0) -> str:
    now_ms = int(time.time() * 1000)
    return issue(user, WritePosition(2, offset, now_ms - age_ms), key.encode())


@pytest.fixture
def tree() -> FakeTree:
    return FakeTree(sample_tree("u1"))


@pytest.fixture
async def client(tree: FakeTree) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(
        recall_api_keys=[SecretStr(KEY)],
        api_max_wait_ms=300,
        api_write_token_key=SecretStr(TOKEN_KEY),
    )
    async with serving(recall_app(fake_container(settings, tree))) as test_client:
        yield test_client


async def recall(client: httpx.AsyncClient, **body: object) -> httpx.Response:
    return await client.post(
        "/v1/recall", json={"user_id": "u1", "query": "q", **body}, headers=AUTH
    )


async def test_a_write_the_segmenter_is_past_answers_at_once(
    client: httpx.AsyncClient, tree: FakeTree
) -> None:
    await tree.mark_progress({2: 41})
    reply = await recall(client, after=token(40), wait_ms=300)
    assert reply.status_code == 200
    body = reply.json()
    assert body["pending"] is False and body["pending_reason"] is None and body["memories"]


async def test_a_write_not_yet_committed_answers_what_is_there_and_pending(
    client: httpx.AsyncClient, tree: FakeTree
) -> None:
    await tree.mark_progress({2: 40})  # the record at 40 is not in yet
    started = time.monotonic()
    body = (await recall(client, after=[token(39), token(40)], wait_ms=30)).json()
    assert body["pending"] is True and body["pending_reason"] == "not_yet_processed"
    assert body["memories"] and time.monotonic() - started >= 0.03
    assert body["timings_ms"]["after"] >= 30


async def test_a_message_held_for_its_reply_is_reported_with_its_id(
    client: httpx.AsyncClient, tree: FakeTree
) -> None:
    await tree.mark_progress({2: 41})
    tree.states["u1"] = json.dumps({"pending": [{"type": "turn.v1", "event_id": "q9"}]})
    body = (await recall(client, after=token(40))).json()
    assert body["pending"] is True and body["pending_reason"] == "awaiting_reply"
    assert body["held_messages"] == ["q9"]


async def test_without_after_nothing_is_waited_for_or_pending(
    client: httpx.AsyncClient, tree: FakeTree
) -> None:
    tree.states["u1"] = json.dumps({"pending": [{"type": "turn.v1", "event_id": "q9"}]})
    body = (await recall(client)).json()
    assert body["pending"] is False and body["held_messages"] == []
    assert "after" not in body["timings_ms"]


@pytest.mark.parametrize(
    ("after", "kind", "loc"),
    [
        ("not-a-token", "write_token_malformed", ["body", "after"]),
        (["mst1.@@"], "write_token_malformed", ["body", "after", 0]),
        (token(1, key="guessed"), "write_token_forged", ["body", "after"]),
        (token(1, age_ms=9 * DAY_MS), "write_token_stale", ["body", "after"]),
        (token(1, age_ms=-DAY_MS), "write_token_future", ["body", "after"]),
    ],
    # Named, not by the tokens (they hold the time they were made): every process that
    # collects the tests (pytest-xdist's workers) sees the same ids.
    ids=["malformed", "malformed-in-list", "forged", "stale", "future"],
)
async def test_a_token_that_cannot_be_satisfied_is_a_422_naming_the_field(
    client: httpx.AsyncClient, after: object, kind: str, loc: list[object]
) -> None:
    reply = await recall(client, after=after, wait_ms=300)
    assert reply.status_code == 422
    [error] = reply.json()["detail"]
    assert error["type"] == kind and error["loc"] == loc


async def test_a_token_of_another_user_is_refused(client: httpx.AsyncClient) -> None:
    reply = await recall(client, after=token(1, user="u2"))
    assert reply.status_code == 403 and reply.json()["detail"].startswith("after:")


@pytest.mark.parametrize(
    "body",
    [
        {"wait_ms": 301},
        {"wait_ms": -1},
        {"wait_ms": "5"},
        {"after": ""},
        {"after": ["mst1.A"] * 65},
        {"after": 5},
    ],
)
async def test_wait_and_after_are_bounded(
    client: httpx.AsyncClient, body: dict[str, object]
) -> None:
    reply = await recall(client, **body)
    assert reply.status_code == 422
    assert {e["loc"][1] for e in reply.json()["detail"]} <= {"wait_ms", "after"}


READS_OF_THE_TREE = [
    ("/v1/users/u1/profile", {}),
    ("/v1/users/u1/memories", {}),
    ("/v1/memories/u1-m", {"user_id": "u1"}),
    ("/v1/users/u1/facts", {}),
    ("/v1/users/u1/entities", {}),
]


@pytest.mark.parametrize(("path", "params"), READS_OF_THE_TREE)
async def test_the_reads_of_the_tree_wait_for_after_too(
    client: httpx.AsyncClient, tree: FakeTree, path: str, params: dict[str, str]
) -> None:
    await tree.mark_progress({2: 41})
    done = await client.get(
        path, params={**params, "after": token(40), "wait_ms": 300}, headers=AUTH
    )
    late = await client.get(
        path, params={**params, "after": [token(40), token(41)], "wait_ms": 20}, headers=AUTH
    )
    assert done.status_code == 200 and done.json()["pending"] is False
    assert late.status_code == 200
    assert late.json()["pending"] is True and late.json()["pending_reason"] == "not_yet_processed"


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/v1/memories/u1-nothing", {"user_id": "u1"}),
        ("/v1/users/u1/facts", {"subject": "Nobody"}),
        ("/v1/users/u1/entities/Nobody", {}),
    ],
)
async def test_a_404_says_when_the_writes_it_waited_for_are_pending(
    client: httpx.AsyncClient, tree: FakeTree, path: str, params: dict[str, str]
) -> None:
    await tree.mark_progress({2: 40})
    late = await client.get(
        path, params={**params, "after": token(40), "wait_ms": 10}, headers=AUTH
    )
    settled = await client.get(path, params=params, headers=AUTH)
    assert late.status_code == 404 and "not_yet_processed" in late.json()["detail"]
    assert settled.status_code == 404 and "pending" not in settled.json()["detail"]


@pytest.mark.parametrize(("path", "params"), READS_OF_THE_TREE)
async def test_every_read_of_the_tree_refuses_a_token_of_another_user(
    client: httpx.AsyncClient, path: str, params: dict[str, str]
) -> None:
    reply = await client.get(path, params={**params, "after": token(1, user="u2")}, headers=AUTH)
    assert reply.status_code == 403 and reply.json()["detail"].startswith("after:")


@pytest.mark.parametrize(
    ("params", "status", "loc"),
    [
        ({"after": "nope"}, 422, ["query", "after", 0]),
        ({"after": token(1), "wait_ms": 301}, 422, ["query", "wait_ms"]),
        ({"after": token(1, user="u2")}, 403, None),
    ],
)
async def test_the_reads_of_the_tree_refuse_bad_tokens_naming_the_parameter(
    client: httpx.AsyncClient, params: dict[str, object], status: int, loc: list[object] | None
) -> None:
    reply = await client.get("/v1/users/u1/profile", params=params, headers=AUTH)
    assert reply.status_code == status
    if loc is not None:
        assert [e["loc"] for e in reply.json()["detail"]] == [loc]
