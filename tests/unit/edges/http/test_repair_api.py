"""Repairing over HTTP with in-memory stores: the handle, the status, an unknown user."""

from __future__ import annotations

import asyncio

from tests.unit.edges.http.test_forget_messages_api import serving
from tests.unit.fakes import FakePublisher, FakeTree, sample_tree


async def test_a_repair_of_agreeing_stores_ends_done_and_an_unknown_user_is_404() -> None:
    async with serving(FakeTree(sample_tree("u1")), FakePublisher()) as client:
        started = await client.post("/v1/users/u1/repair")
        assert started.status_code == 202, started.text
        body = started.json()
        assert body["handle"] == "/v1/users/u1/repair"
        assert body["tree"] == body["index"] and sum(body["tree"].values()) > 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while (state := (await client.get(body["handle"])).json())["status"] != "done":
            assert loop.time() < deadline, state
            await asyncio.sleep(0.01)
        for method in (client.post, client.get):
            reply = await method("/v1/users/nobody/repair")
            assert reply.status_code == 404
            assert "nothing to repair" in reply.json()["detail"]
