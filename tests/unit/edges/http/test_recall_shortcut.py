"""The short way to `POST /v1/recall` answers as the route does, and leaves the rest to it."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import SecretStr
from redis.exceptions import ConnectionError as RedisConnectionError
from tests.unit.edges.http.test_api import serving
from tests.unit.fakes import FakeTree, fake_container, sample_tree

from memstream.bootstrap import recall_app
from memstream.domain.write_token import WritePosition, issue
from memstream.edges.http.recall_route import RecallShortcut
from memstream.recall.pipeline import RecallPipeline
from memstream.settings import Settings

KEY = "test-key-1"
AUTH = {"Authorization": f"Bearer {KEY}"}
TOKEN_KEY = "token-key-of-the-test"


def built(*, shortcut: bool) -> tuple[FastAPI, FakeTree]:
    settings = Settings(
        recall_api_keys=[SecretStr(KEY)],
        recall_max_query_chars=50,
        api_write_token_key=SecretStr(TOKEN_KEY),
    )
    tree = FakeTree(sample_tree("u1"))
    app = recall_app(fake_container(settings, tree))
    if not shortcut:
        app.user_middleware = [m for m in app.user_middleware if m.cls is not RecallShortcut]
    return app, tree


def token(user: str, offset: int) -> str:
    return issue(user, WritePosition(0, offset, int(time.time() * 1000)), TOKEN_KEY.encode())


def comparable(reply: httpx.Response) -> tuple[int, str, Any]:
    """Status, content type and body, with the stage timings (wall times) left out."""
    body = reply.json()
    if isinstance(body, dict) and "timings_ms" in body:
        body["timings_ms"] = sorted(body["timings_ms"])
    if isinstance(body, dict) and body.get("trace"):
        body["trace"]["timings_ms"] = sorted(body["trace"]["timings_ms"])
    return reply.status_code, reply.headers["content-type"], body


async def both(
    content: bytes, headers: dict[str, str], path: str = "/v1/recall"
) -> tuple[httpx.Response, httpx.Response, int]:
    """The answers with and without the shortcut; how many recalls took the short way."""
    replies = []
    taken: list[bool] = []
    original = RecallShortcut._taken

    def spying(self: RecallShortcut, scope: Any, body: bytes) -> Any:
        found = original(self, scope, body)
        taken.append(found is not None)
        return found

    for shortcut in (True, False):
        app, tree = built(shortcut=shortcut)
        await tree.mark_progress({0: 10})
        with pytest.MonkeyPatch.context() as patched:
            patched.setattr(RecallShortcut, "_taken", spying)
            async with serving(app) as client:
                replies.append(await client.post(path, content=content, headers=headers))
    return replies[0], replies[1], sum(taken)


JSON = {**AUTH, "Content-Type": "application/json"}


@pytest.mark.parametrize(
    "body",
    [
        {"user_id": "u1", "query": "what did I do"},
        {"user_id": "u1", "query": "q", "complexity": "hybrid", "with_derivation": True},
        {"user_id": "u1", "query": "q", "after": token("u1", 3), "wait_ms": 100},
        {"user_id": "u1", "query": "q", "after": [token("u1", 3)], "explain": True},
        {"user_id": "nobody", "query": "q"},
    ],
)
async def test_a_well_formed_recall_gets_the_routes_answer_the_short_way(
    body: dict[str, Any],
) -> None:
    short, route, taken = await both(json.dumps(body).encode(), JSON)
    assert taken == 1
    assert short.status_code == 200
    assert comparable(short) == comparable(route)
    assert short.headers["content-length"] == str(len(short.content))


@pytest.mark.parametrize(
    ("content", "headers", "path"),
    [
        (b'{"user_id": "u1", "query": "q", "limit": 3}', JSON, "/v1/recall"),  # unknown field
        (b'{"user_id": "u1", "query": "' + b"x" * 60 + b'"}', JSON, "/v1/recall"),  # too long
        (b'{"user_id": "u1", "query": "q", "wait_ms": "5"}', JSON, "/v1/recall"),
        (b'{"user_id": "u1", "query": "q"', JSON, "/v1/recall"),  # not JSON
        (b'{"user_id": "u1", "query": "q"}', {**AUTH, "Content-Type": "text/plain"}, "/v1/recall"),
        (b'{"user_id": "u1", "query": "q"}', JSON, "/v1/recall?explain=true"),
        (
            json.dumps({"user_id": "u1", "query": "q", "after": token("u2", 3)}).encode(),
            JSON,
            "/v1/recall",
        ),  # another user's token: 403
        (
            json.dumps({"user_id": "u1", "query": "q", "after": "forged"}).encode(),
            JSON,
            "/v1/recall",
        ),
    ],
)
async def test_anything_else_goes_on_to_the_route_which_answers_it(
    content: bytes, headers: dict[str, str], path: str
) -> None:
    short, route, taken = await both(content, headers, path)
    assert taken == 0 and short.status_code >= 400
    assert comparable(short) == comparable(route)


async def test_a_store_that_fails_the_short_way_answers_503_as_the_route_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def down(self: RecallPipeline, request: Any) -> Any:
        raise RedisConnectionError("redis went away")

    monkeypatch.setattr(RecallPipeline, "recall", down)
    short, route, taken = await both(b'{"user_id": "u1", "query": "q"}', JSON)
    assert taken == 1 and short.status_code == 503
    assert (short.status_code, short.content) == (route.status_code, route.content)
