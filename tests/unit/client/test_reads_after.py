"""Every read of the tree in the SDK names the writes it must see: `after` (receipts or
tokens) and `wait_ms` go as query parameters, and nothing of them when no write is named."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from memstream.client import AsyncRecallClient, RecallClient, Receipt

RECEIPT = Receipt("e1", "mst1.A")
ENTITIES = {"user_id": "ann", "total": 0, "entities": []}


def recording(seen: list[httpx.URL]) -> Callable[[httpx.Request], httpx.Response]:
    """Answers the entity list, and 404 (nothing found) to the other reads."""

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url)
        if request.url.path.endswith("/entities"):
            return httpx.Response(200, json=ENTITIES)
        return httpx.Response(404, json={"detail": "no such thing for this user"})

    return answer


def named(url: httpx.URL) -> dict[str, Any]:
    return {"after": url.params.get_list("after"), "wait_ms": url.params.get("wait_ms")}


def test_every_blocking_read_sends_after_and_wait() -> None:
    seen: list[httpx.URL] = []
    with RecallClient("http://memory", transport=httpx.MockTransport(recording(seen))) as m:
        assert m.memory("ann", "n1", after=RECEIPT, wait_ms=700) is None
        assert m.facts("ann", subject="Maya", after=[RECEIPT, "mst1.B"], wait_ms=700) is None
        assert m.entities("ann", after="mst1.B", wait_ms=700).total == 0
        assert m.entity("ann", "Maya", after=RECEIPT, wait_ms=700) is None
        m.facts("ann")
    assert [named(u) for u in seen[:4]] == [
        {"after": ["mst1.A"], "wait_ms": "700"},
        {"after": ["mst1.A", "mst1.B"], "wait_ms": "700"},
        {"after": ["mst1.B"], "wait_ms": "700"},
        {"after": ["mst1.A"], "wait_ms": "700"},
    ]
    assert seen[0].params["user_id"] == "ann" and seen[1].params["subject"] == "Maya"
    assert named(seen[4]) == {"after": [], "wait_ms": None}


async def test_every_async_read_sends_after_and_wait() -> None:
    seen: list[httpx.URL] = []
    transport = httpx.MockTransport(recording(seen))
    async with AsyncRecallClient("http://memory", transport=transport) as m:
        assert await m.memory("ann", "n1", after=RECEIPT) is None
        assert await m.facts("ann", after=RECEIPT) is None
        assert (await m.entities("ann", after=RECEIPT)).total == 0
        assert await m.entity("ann", "Maya", after=RECEIPT) is None
    assert [named(u) for u in seen] == [{"after": ["mst1.A"], "wait_ms": "2000"}] * 4
