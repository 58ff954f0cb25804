"""The webhook example (`examples/feed_webhook.py`) against a real local HTTP server: the
feed's events arrive in order, signed, once each after a failed delivery is retried; a
refused event stops the forwarder uncommitted, so the next run sends it again."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest
from fastapi import FastAPI, Request, Response

from memstream.client.feed import MemoryFeed
from memstream.client.feed_events import FeedEvent
from memstream.contracts.catalog import Catalog
from memstream.contracts.codec import removed_event
from memstream.settings import Settings

from .local_server import serving
from .test_feed_consumer import USER, memory, publish

SECRET = b"shared-secret"


def example() -> ModuleType:
    path = Path(__file__).parents[2] / "examples" / "feed_webhook.py"
    spec = importlib.util.spec_from_file_location("feed_webhook", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class Receiver:
    """A webhook that answers each status of `script` in turn, then 204; keeps what came."""

    def __init__(self, script: list[int]) -> None:
        self.script = script
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.app = FastAPI()
        self.app.post("/hook")(self.hook)

    async def hook(self, request: Request) -> Response:
        body = await request.body()
        self.received.append((dict(request.headers), body))
        return Response(status_code=self.script.pop(0) if self.script else 204)


async def first(feed: MemoryFeed, n: int) -> AsyncIterator[FeedEvent]:
    for _ in range(n):
        yield await anext(feed)


def feed(settings: Settings, catalog: Catalog) -> MemoryFeed:
    group = f"{settings.broker.consumer_group}-webhook"
    return MemoryFeed(settings.broker.bootstrap, group_id=group, catalog=catalog)


async def test_events_arrive_signed_in_order_and_a_failed_delivery_is_retried(
    settings: Settings, catalog: Catalog
) -> None:
    hooks = example()
    await publish(settings, catalog, [memory(0), memory(0, 2), removed_event(USER, [f"{USER}-m0"])])
    receiver = Receiver([503])  # the first attempt fails: the example retries it
    async with (
        serving(receiver.app) as base,
        httpx.AsyncClient(timeout=10) as client,
        feed(settings, catalog) as events,
    ):
        sent = await hooks.forward(first(events, 3), client, f"{base}/hook", SECRET)
    assert sent == 3
    assert len(receiver.received) == 4
    ids = [headers["memstream-event-id"] for headers, _ in receiver.received]
    assert ids == [f"memory:{USER}-m0:v1", f"memory:{USER}-m0:v1", f"memory:{USER}-m0:v2", ids[3]]
    assert ids[3].startswith(f"removed:{USER}:")
    for headers, body in receiver.received:
        assert hooks.verify(SECRET, body, headers["memstream-signature"], time.time())
        assert not hooks.verify(
            b"another secret", body, headers["memstream-signature"], time.time()
        )
        assert not hooks.verify(SECRET, body + b" ", headers["memstream-signature"], time.time())
    bodies = [json.loads(body) for _, body in receiver.received]
    assert [b["type"] for b in bodies] == ["memory.v1"] * 3 + ["memory_removed.v1"]
    assert "offset" not in bodies[0] and bodies[2]["version"] == 2


async def test_a_refused_event_stops_the_forwarder_and_is_sent_again_by_the_next_run(
    settings: Settings, catalog: Catalog
) -> None:
    hooks = example()
    await publish(settings, catalog, [memory(0), memory(1)])
    receiver = Receiver([204, 400])
    async with serving(receiver.app) as base, httpx.AsyncClient(timeout=10) as client:
        url = f"{base}/hook"
        with pytest.raises(hooks.Undeliverable, match="400"):
            async with feed(settings, catalog) as events:
                await hooks.forward(first(events, 2), client, url, SECRET)
        async with feed(settings, catalog) as events:
            assert await hooks.forward(first(events, 1), client, url, SECRET) == 1
    ids = [headers["memstream-event-id"] for headers, _ in receiver.received]
    assert ids == [f"memory:{USER}-m0:v1", f"memory:{USER}-m1:v1", f"memory:{USER}-m1:v1"]


def test_an_old_or_malformed_signature_is_refused() -> None:
    hooks = example()
    body = b'{"type":"memory.v1"}'
    now = time.time()
    assert hooks.verify(SECRET, body, hooks.sign(SECRET, body, int(now)), now)
    assert not hooks.verify(SECRET, body, hooks.sign(SECRET, body, int(now) - 301), now)
    assert not hooks.verify(SECRET, body, "v1=abc", now)
    assert not hooks.verify(SECRET, body, "t=soon,v1=abc", now)
