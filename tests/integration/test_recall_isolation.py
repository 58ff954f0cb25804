"""Recall never crosses users, and forgetting a user leaves nothing of them (real stores),
for each tenant with its own key; another tenant's key reaches none of them.

Nodes are written straight into Redis and Qdrant (local mode) with hashing embeddings, so
hypothesis can try many shapes quickly; recall goes over real HTTP.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstream.domain.tenancy import key_digest
from memstream.edges.http.server import BackgroundServer
from memstream.settings import Settings

from .trees import container_of, forget_events, module_settings, served, user_tree, write_nodes

# Users share this vocabulary, so every query matches memories of several users.
WORDS = ["hiking", "pottery", "sourdough", "guitar", "paris", "dance", "garden", "chess"]
# Characters that are special to Redis glob patterns or key layout, to try to confuse SCAN.
USER_CHARS = "ab*?[]\\-_.:"
TENANT_KEYS = {"acme": "acme-isolation-key", "globex": "globex-isolation-key"}


def auth(tenant: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TENANT_KEYS[tenant]}"}


def other(tenant: str) -> str:
    return next(t for t in TENANT_KEYS if t != tenant)


@pytest.fixture(scope="module")
def server(
    stack_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BackgroundServer]:
    data_dir = tmp_path_factory.mktemp("isolation")
    keys = data_dir / "keys.json"
    tenants = {t: [{"id": f"{t}-key", "sha256": key_digest(k)}] for t, k in TENANT_KEYS.items()}
    keys.write_text(json.dumps({"tenants": tenants}))
    config = module_settings(stack_settings, data_dir, embedder="hashing", api_key_file=keys)
    with served(config) as running:
        yield running


sentences = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
trees = st.dictionaries(
    keys=st.text(USER_CHARS, min_size=1, max_size=5),
    values=st.lists(st.lists(sentences, min_size=1, max_size=4), min_size=1, max_size=3),
    min_size=2,
    max_size=4,
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    users=trees,
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    complexity=st.sampled_from(["simple", "hybrid", "complex"]),
)
@pytest.mark.parametrize("tenant", TENANT_KEYS)
def test_recall_never_returns_another_users_memories(
    server: BackgroundServer,
    tenant: str,
    users: dict[str, list[list[str]]],
    query: str,
    complexity: str,
) -> None:
    # A fresh suffix per example (hypothesis replays examples): no leftovers collide.
    salt = uuid.uuid4().hex[:8]
    named = {f"{tenant}:{u}~{salt}": texts for u, texts in users.items()}
    trees_by_user = {u: user_tree(u, texts) for u, texts in named.items()}
    container = container_of(server)
    server.call(lambda: write_nodes(container, [n for t in trees_by_user.values() for n in t]))
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for user, nodes in trees_by_user.items():
            body = {"user_id": user, "query": query, "complexity": complexity, "max_tokens": 16000}
            reply = client.post("/v1/recall", json=body, headers=auth(tenant))
            assert reply.status_code == 200, reply.text
            foreign = client.post("/v1/recall", json=body, headers=auth(other(tenant)))
            assert (foreign.status_code, foreign.json()) == (404, {"detail": "no such user"})
            memories = reply.json()["memories"]
            own = {n.id for n in nodes}
            assert memories, "every user here has memories matching the vocabulary"
            assert {m["user_id"] for m in memories} == {user}
            assert {m["id"] for m in memories} <= own
        for user in trees_by_user:
            path = f"/v1/users/{quote(user, safe='')}"
            assert client.delete(path, headers=auth(tenant)).status_code == 200


@pytest.mark.parametrize("tenant", TENANT_KEYS)
def test_forgetting_one_user_leaves_no_trace_and_keeps_the_others(
    server: BackgroundServer, tenant: str
) -> None:
    # One id is a prefix of the other.
    gone, kept = f"{tenant}:forget-me*[1]", f"{tenant}:forget-me*[1]x"
    container = container_of(server)
    nodes = user_tree(gone, [["hiking paris"], ["dance chess"]])
    nodes += user_tree(kept, [["hiking garden"]])
    server.call(lambda: write_nodes(container, nodes))
    store = redis.Redis.from_url(container.settings.redis.url)
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            path = f"/v1/users/{quote(gone, safe='')}"
            refused = client.delete(path, headers=auth(other(tenant)))
            assert (refused.status_code, refused.json()) == (404, {"detail": "no such user"})
            assert server.call(lambda: container.index.count(gone)) == 8
            removed = client.delete(path, headers=auth(tenant)).json()
            assert removed["qdrant_points"] == 8 and removed["redis_keys"] > 0
            assert server.call(lambda: container.index.count(gone)) == 0
            assert server.call(lambda: container.index.count(kept)) == 5
            left = [k for k in store.scan_iter(count=1000) if b"{" + gone.encode() + b"}" in k]
            assert [k.rsplit(b":", 1)[1] for k in left] == [
                b"tombstone"
            ]  # only what stops a replay
            assert [k for k in store.scan_iter(count=1000) if b"{" + kept.encode() + b"}" in k]
            body = {"user_id": gone, "query": "hiking", "max_tokens": 16000}
            after = client.post("/v1/recall", json=body, headers=auth(tenant))
            assert after.json()["memories"] == []
    finally:
        store.close()
    events = asyncio.run(forget_events(container.settings, gone))
    assert events == [{"type": "forget.v1", "user_id": gone}]
