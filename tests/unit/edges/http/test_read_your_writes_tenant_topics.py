"""`after` with a turns topic per tenant: a tenant user's token waits on the mark of its
tenant's topic, and a token of another topic than the API routes the user to is refused."""

from __future__ import annotations

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
USER = "acme:u1"


def token(offset: int, topic: str | None) -> str:
    position = WritePosition(2, offset, int(time.time() * 1000), topic)
    return issue(USER, position, TOKEN_KEY.encode())


@pytest.fixture
def tree() -> FakeTree:
    return FakeTree(sample_tree(USER))


@pytest.fixture
def settings() -> Settings:
    return Settings(
        recall_api_keys=[SecretStr(KEY)],
        api_max_wait_ms=300,
        api_write_token_key=SecretStr(TOKEN_KEY),
        turns_topic_per_tenant="acme",
    )


@pytest.fixture
def acme_topic(settings: Settings, tree: FakeTree) -> str:
    container = fake_container(settings, tree)
    return container.settings.broker.turns_routing(container.catalog.turns.name).topic_for(USER)


@pytest.fixture
async def client(settings: Settings, tree: FakeTree) -> AsyncIterator[httpx.AsyncClient]:
    async with serving(recall_app(fake_container(settings, tree))) as test_client:
        yield test_client


async def recall(client: httpx.AsyncClient, **body: object) -> httpx.Response:
    return await client.post(
        "/v1/recall", json={"user_id": USER, "query": "q", **body}, headers=AUTH
    )


async def test_a_tenants_token_answers_once_its_topics_mark_passes_it(
    client: httpx.AsyncClient, tree: FakeTree, acme_topic: str
) -> None:
    await tree.mark_progress({2: 500})  # the shared topic's partition 2 is far ahead
    await tree.mark_progress({2: 40}, topic=acme_topic)
    waited = (await recall(client, after=token(40, acme_topic), wait_ms=30)).json()
    assert waited["pending"] is True and waited["pending_reason"] == "not_yet_processed"
    await tree.mark_progress({2: 41}, topic=acme_topic)
    done = (await recall(client, after=token(40, acme_topic), wait_ms=300)).json()
    assert done["pending"] is False and done["memories"]


async def test_a_token_of_the_shared_topic_for_a_tenants_user_is_refused_as_moved(
    client: httpx.AsyncClient, tree: FakeTree
) -> None:
    """Issued before the tenant got its topic: its offset is the shared topic's, which no
    mark of the tenant's topic says anything about."""
    await tree.mark_progress({2: 500})
    reply = await recall(client, after=token(1, None), wait_ms=300)
    assert reply.status_code == 422
    [error] = reply.json()["detail"]
    assert error["type"] == "write_token_moved" and error["loc"] == ["body", "after"]
    read = await client.get(
        f"/v1/users/{USER}/memories", params={"after": token(1, None)}, headers=AUTH
    )
    assert read.status_code == 422 and read.json()["detail"][0]["type"] == "write_token_moved"


async def test_a_tenants_token_read_by_an_api_without_the_tenants_topic_is_refused(
    tree: FakeTree, acme_topic: str
) -> None:
    plain = Settings(
        recall_api_keys=[SecretStr(KEY)],
        api_max_wait_ms=300,
        api_write_token_key=SecretStr(TOKEN_KEY),
    )
    await tree.mark_progress({2: 500})
    async with serving(recall_app(fake_container(plain, tree))) as client:
        reply = await recall(client, after=token(1, acme_topic), wait_ms=300)
    assert reply.status_code == 422
    assert reply.json()["detail"][0]["type"] == "write_token_moved"
