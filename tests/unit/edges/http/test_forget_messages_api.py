"""Forgetting messages over HTTP with in-memory stores: what is published, the status."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from fastapi import FastAPI
from tests.unit.fakes import FakePublisher, FakeTree, fake_container, sample_tree

from memstream.bootstrap import recall_app
from memstream.contracts.catalog import load_catalog
from memstream.settings import Settings

MESSAGE = "msg-u1-l0000"  # the source of one leaf of the sample tree (and of its ancestors)


@asynccontextmanager
async def serving(tree: FakeTree, publisher: FakePublisher) -> AsyncIterator[httpx.AsyncClient]:
    container = fake_container(Settings(recall_auth_disabled=True), tree, publisher=publisher)
    app: FastAPI = recall_app(container)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://test") as client,
    ):
        yield client


async def test_delete_of_a_message_publishes_forget_with_its_id_and_answers_202() -> None:
    publisher = FakePublisher()
    async with serving(FakeTree(sample_tree("u1")), publisher) as client:
        reply = await client.delete(f"/v1/users/u1/messages/{MESSAGE}")
    assert reply.status_code == 202
    assert reply.json() == {
        "user_id": "u1",
        "message_ids": [MESSAGE],
        "status": "pending",
        "handles": [f"/v1/users/u1/messages/{MESSAGE}/forget"],
    }
    [event] = publisher.commands
    assert (event.key, event.value) == (
        "u1",
        {"type": "forget.v1", "user_id": "u1", "message_ids": [MESSAGE]},
    )
    # What the API publishes is what the workers accept.
    assert load_catalog().validate("memstream.turns.v1", event.value) == []


async def test_the_batch_form_publishes_one_event_for_all_and_a_handle_each() -> None:
    publisher = FakePublisher()
    async with serving(FakeTree(), publisher) as client:
        reply = await client.post(
            "/v1/users/u1/messages:forget", json={"message_ids": ["a/1", "b", "a/1"]}
        )
        too_many = await client.post(
            "/v1/users/u1/messages:forget", json={"message_ids": [str(i) for i in range(101)]}
        )
    assert reply.status_code == 202
    assert reply.json()["handles"] == [
        "/v1/users/u1/messages/a%2F1/forget",
        "/v1/users/u1/messages/b/forget",
    ]
    [event] = publisher.commands
    assert event.value["message_ids"] == ["a/1", "b"]
    assert too_many.status_code == 422


async def test_status_is_pending_until_tombstoned_and_no_memory_cites_the_message() -> None:
    tree = FakeTree(sample_tree("u1"))
    async with serving(tree, FakePublisher()) as client:

        async def status() -> str:
            reply = await client.get(f"/v1/users/u1/messages/{MESSAGE}/forget")
            assert reply.status_code == 200
            return str(reply.json()["status"])

        assert await status() == "pending"  # nothing recorded yet
        tree.forgotten["u1"] = {MESSAGE}
        assert await status() == "pending"  # tombstoned, but memories still cite it
        citing = [s.node for s in tree.stored.values() if MESSAGE in s.node.source_ids]
        assert len(citing) == 5  # the leaf and its four ancestors
        for node in citing[:-1]:
            tree.remove(node)
        assert await status() == "pending"  # one ancestor left
        tree.remove(citing[-1])
        assert await status() == "done"
