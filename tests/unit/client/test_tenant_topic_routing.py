"""The SDK's producer sends a listed tenant's users' events to the tenant's turns topic."""

from __future__ import annotations

import asyncio
from typing import Any

from memstream.client import AsyncMemstreamProducer
from memstream.client.events import forget_event, turn_event


class Sent:
    """aiokafka's producer as far as `publish` uses it: what was sent, to which topic."""

    def __init__(self) -> None:
        self.topics: list[tuple[str, bytes]] = []

    async def send(self, topic: str, *, key: bytes, **_: Any) -> asyncio.Future[None]:
        self.topics.append((topic, key))
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done


async def test_a_listed_tenants_users_go_to_its_topic_and_the_rest_to_the_shared_one() -> None:
    producer = AsyncMemstreamProducer("unused:9092", topic_prefix="p.", tenant_topics=["acme"])
    sent = Sent()
    producer._producer = sent
    await producer.publish(turn_event(user_id="acme:ann", session_id="s", seq=0, text="hi"))
    await producer.publish(forget_event(user_id="acme:ann"))
    await producer.publish(turn_event(user_id="globex:bo", session_id="s", seq=0, text="hi"))
    await producer.publish(turn_event(user_id="ann", session_id="s", seq=0, text="hi"))
    await producer.flush()
    assert sent.topics == [
        ("p.memstream.turns.v1.acme", b"acme:ann"),
        ("p.memstream.turns.v1.acme", b"acme:ann"),
        ("p.memstream.turns.v1", b"globex:bo"),
        ("p.memstream.turns.v1", b"ann"),
    ]
