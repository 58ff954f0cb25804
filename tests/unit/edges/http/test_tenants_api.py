"""Tenant keys over the HTTP API (in-memory stores): reach, the key file, rates, the audit."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from prometheus_client import CollectorRegistry
from pydantic import SecretStr
from tests.unit.fakes import FakePublisher, FakeTree, fake_container, sample_tree

from memstream.bootstrap import recall_app
from memstream.domain.tenancy import KeyFileError, key_digest
from memstream.metrics import Metrics
from memstream.settings import Settings

from .test_api import serving

ENV_KEY = "operator-env-key"
ACME_KEY, GLOBEX_KEY, OPS_KEY = "acme-secret-1", "globex-secret-1", "ops-secret-1"
ANN, BOB = "acme:ann", "globex:bob"  # both exist
GHOST = "globex:ghost"  # exists nowhere
NO_SUCH_USER = {"detail": "no such user"}


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _entry(key_id: str, key: str) -> dict[str, str]:
    return {"id": key_id, "sha256": key_digest(key)}


def key_file_document(**tenants: list[dict[str, str]]) -> dict[str, object]:
    return {"operators": [_entry("ops-1", OPS_KEY)], "tenants": tenants}


def default_keys() -> dict[str, object]:
    return key_file_document(
        acme=[_entry("acme-bot", ACME_KEY)], globex=[_entry("globex-bot", GLOBEX_KEY)]
    )


def replace_content(path: Path, content: str) -> None:
    path.write_text(content)


def tenant_settings(key_file: Path, **updates: object) -> Settings:
    return Settings(
        recall_api_keys=[SecretStr(ENV_KEY)],
        api_key_file=key_file,
        api_key_file_poll_s=3600,  # the tests call check() themselves
        **updates,
    )


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "keys.yaml"
    path.write_text(json.dumps(default_keys()))  # JSON is YAML too
    return path


@pytest.fixture
def publisher() -> FakePublisher:
    return FakePublisher()


@pytest.fixture
def metrics() -> Metrics:
    return Metrics(CollectorRegistry())


@pytest.fixture
async def client(
    key_file: Path, publisher: FakePublisher, metrics: Metrics
) -> AsyncIterator[httpx.AsyncClient]:
    tree = FakeTree(sample_tree(ANN) + sample_tree(BOB))
    container = fake_container(tenant_settings(key_file), tree, publisher=publisher)
    async with serving(recall_app(container, metrics)) as test_client:
        yield test_client


def user_routes(user: str) -> list[tuple[str, str, dict[str, object] | None]]:
    u = quote(user, safe="")
    return [
        ("POST", "/v1/recall", {"user_id": user, "query": "q"}),
        ("GET", f"/v1/users/{u}/profile", None),
        ("GET", f"/v1/users/{u}/memories", None),
        ("GET", f"/v1/users/{u}/overview", None),
        ("GET", f"/v1/users/{u}/facts", None),
        ("GET", f"/v1/users/{u}/entities", None),
        ("GET", f"/v1/memories/{u}-m?user_id={u}", None),
        ("DELETE", f"/v1/users/{u}/messages/e1", None),
        ("POST", f"/v1/users/{u}/messages:forget", {"message_ids": ["e1"]}),
        ("GET", f"/v1/users/{u}/messages/e1/forget", None),
        ("POST", f"/v1/users/{u}/rebuild", None),
        ("GET", f"/v1/users/{u}/rebuilds/r1", None),
        ("POST", f"/v1/users/{u}/repair", None),
        ("GET", f"/v1/users/{u}/repair", None),
        ("DELETE", f"/v1/users/{u}", None),
    ]


async def _call(
    client: httpx.AsyncClient, method: str, path: str, body: object, key: str
) -> httpx.Response:
    return await client.request(method, path, json=body, headers=_auth(key))


async def test_a_tenant_key_reads_its_own_users(client: httpx.AsyncClient) -> None:
    recalled = await client.post(
        "/v1/recall", json={"user_id": ANN, "query": "q"}, headers=_auth(ACME_KEY)
    )
    assert recalled.status_code == 200 and recalled.json()["memories"]
    profile = await client.get(f"/v1/users/{ANN}/profile", headers=_auth(ACME_KEY))
    assert profile.json()["profile"]["user_id"] == ANN


@pytest.mark.parametrize("index", range(len(user_routes(BOB))))
async def test_every_user_route_answers_another_tenants_user_as_one_that_does_not_exist(
    client: httpx.AsyncClient, publisher: FakePublisher, index: int
) -> None:
    existing = user_routes(BOB)[index]
    missing = user_routes(GHOST)[index]
    to_bob = await _call(client, *existing, ACME_KEY)
    to_ghost = await _call(client, *missing, ACME_KEY)
    assert (to_bob.status_code, to_bob.json()) == (404, NO_SUCH_USER)
    assert (to_ghost.status_code, to_ghost.json()) == (404, NO_SUCH_USER)
    assert publisher.commands == []  # nothing published for the workers either


async def test_a_user_no_tenant_knows_answers_the_same_on_the_overview(
    client: httpx.AsyncClient,
) -> None:
    own_ghost = await client.get("/v1/users/acme:ghost/overview", headers=_auth(ACME_KEY))
    foreign = await client.get(f"/v1/users/{BOB}/overview", headers=_auth(ACME_KEY))
    assert (own_ghost.status_code, own_ghost.json()) == (foreign.status_code, foreign.json())


async def test_a_forget_of_another_tenants_user_removes_nothing(
    client: httpx.AsyncClient, publisher: FakePublisher
) -> None:
    refused = await client.delete(f"/v1/users/{BOB}", headers=_auth(ACME_KEY))
    assert refused.status_code == 404
    kept = await client.get(f"/v1/users/{BOB}/profile", headers=_auth(GLOBEX_KEY))
    assert kept.json()["profile"] is not None
    [record] = [r for r in publisher.audited if r["action"] == "user.forget"]
    assert (record["actor"], record["tenant"], record["action"], record["outcome"]) == (
        "acme-bot", "acme", "user.forget", "refused",
    )  # fmt: skip


@pytest.mark.parametrize("key", [ENV_KEY, OPS_KEY])
async def test_operator_keys_reach_every_tenant(client: httpx.AsyncClient, key: str) -> None:
    for user in (ANN, BOB):
        reply = await client.get(f"/v1/users/{user}/profile", headers=_auth(key))
        assert reply.json()["profile"]["user_id"] == user


async def test_ids_escaping_the_namespace_are_out_of_reach(client: httpx.AsyncClient) -> None:
    for user in ["ACME:ann", "\uff41cme:ann", "\u0430cme:ann", "acme", "ann", "acme\uff1aann"]:
        reply = await client.post(
            "/v1/recall", json={"user_id": user, "query": "q"}, headers=_auth(ACME_KEY)
        )
        assert (reply.status_code, reply.json()) == (404, NO_SUCH_USER), user
    slash = await client.get("/v1/users/acme%2F..%2Fglobex:bob/profile", headers=_auth(ACME_KEY))
    assert slash.status_code == 422


async def test_forgets_and_rebuilds_are_audited_without_memory_text(
    client: httpx.AsyncClient, publisher: FakePublisher
) -> None:
    assert (await client.delete(f"/v1/users/{ANN}", headers=_auth(ACME_KEY))).status_code == 200
    await client.post(f"/v1/users/{BOB}/rebuild", headers=_auth(OPS_KEY))
    await client.get("/v1/users?prefix=", headers=_auth(ACME_KEY))
    forget, rebuild, listing = [r for r in publisher.audited if r["actor"] != "memstream"]
    assert (forget["action"], forget["user_id"], forget["outcome"], forget["status"]) == (
        "user.forget", ANN, "done", 200,
    )  # fmt: skip
    assert (rebuild["actor"], rebuild["tenant"], rebuild["action"]) == (
        "ops-1",
        None,
        "user.rebuild",
    )
    assert (listing["action"], listing["tenant"]) == ("users.list", "acme")
    texts = {n.text for n in sample_tree(ANN) + sample_tree(BOB)}
    assert not any(text in json.dumps(publisher.audited) for text in texts)
    assert ACME_KEY not in json.dumps(publisher.audited)


async def test_a_changed_key_file_is_served_without_a_restart(
    client: httpx.AsyncClient, key_file: Path, publisher: FakePublisher, metrics: Metrics
) -> None:
    app = client._transport.app  # type: ignore[attr-defined]
    watcher = app.state.tenancy.watcher
    replace_content(
        key_file, json.dumps(key_file_document(acme=[_entry("acme-new", "acme-secret-2")]))
    )
    watcher.check()
    assert (
        await client.get(f"/v1/users/{ANN}/profile", headers=_auth(ACME_KEY))
    ).status_code == 401
    assert (
        await client.get(f"/v1/users/{ANN}/profile", headers=_auth("acme-secret-2"))
    ).status_code == 200
    assert metrics.key_file_reloads.labels("reloaded")._value.get() == 1
    await app.state.tenancy.settled()
    assert [r["action"] for r in publisher.audited] == ["keys.loaded", "keys.reloaded"]


@pytest.mark.parametrize(
    "content",
    [
        "tenants: {acme: [",  # does not parse
        json.dumps(key_file_document(acme=[])),  # a tenant without keys
        json.dumps(key_file_document(a=[_entry("k1", "same")], b=[_entry("k2", "same")])),
        json.dumps(key_file_document(acme=[_entry("acme-env", ENV_KEY)])),  # the env's key
        "",
    ],
)
async def test_a_bad_key_file_keeps_the_previous_keys_logs_and_counts(
    client: httpx.AsyncClient,
    key_file: Path,
    metrics: Metrics,
    publisher: FakePublisher,
    caplog: pytest.LogCaptureFixture,
    content: str,
) -> None:
    app = client._transport.app  # type: ignore[attr-defined]
    replace_content(key_file, content)
    with caplog.at_level(logging.ERROR):
        app.state.tenancy.watcher.check()
        app.state.tenancy.watcher.check()  # the same bad content: reported once
    assert (
        await client.get(f"/v1/users/{ANN}/profile", headers=_auth(ACME_KEY))
    ).status_code == 200
    assert metrics.key_file_reloads.labels("refused")._value.get() == 1
    [error] = [r for r in caplog.records if "key file refused" in r.getMessage()]
    assert "the previous keys stay in force" in error.getMessage()
    await app.state.tenancy.settled()
    assert publisher.audited[-1]["action"] == "keys.refused"


def test_a_bad_key_file_at_start_up_stops_the_api(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(key_file_document(acme=[])))
    with pytest.raises(KeyFileError, match="has no keys"):
        recall_app(fake_container(tenant_settings(path), FakeTree()))
    path.unlink()
    with pytest.raises(KeyFileError, match="cannot read"):
        recall_app(fake_container(tenant_settings(path), FakeTree()))


async def test_a_tenant_over_its_rate_gets_429_with_retry_after(key_file: Path) -> None:
    metrics = Metrics(CollectorRegistry())
    settings = tenant_settings(key_file, api_tenant_rate_per_s=0.5, api_tenant_burst=2)
    container = fake_container(settings, FakeTree(sample_tree(ANN)))
    async with serving(recall_app(container, metrics)) as client:
        path = f"/v1/users/{ANN}/profile"
        answers = [(await client.get(path, headers=_auth(ACME_KEY))) for _ in range(3)]
        other_tenant = await client.get(f"/v1/users/{BOB}/profile", headers=_auth(GLOBEX_KEY))
        operator = [(await client.get(path, headers=_auth(OPS_KEY))).status_code for _ in range(5)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert answers[2].headers["retry-after"] == "2"  # one token at 0.5 a second
    assert other_tenant.status_code == 200 and operator == [200] * 5
    assert metrics.tenant_rate_limited.labels("acme")._value.get() == 1
