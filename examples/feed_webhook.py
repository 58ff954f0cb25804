"""Forward memstream's change feed to a webhook, signed, with retries (`docs/change-feed.md`).

    FEED_WEBHOOK_SECRET=... MEMSTREAM_API_KEY=... python examples/feed_webhook.py \
        --bootstrap localhost:9092 --group my-webhook --url https://example.org/hooks/memstream \
        --api http://memstream:8080

Records carrying users' words come sealed (docs/forget-everywhere.md); the forwarder has the
recall API open them (`--api`, with MEMSTREAM_API_KEY when the API asks for a key), so the
webhook receives the events as published.

Each event is POSTed as its JSON (the schemas in `topics/memstream.memories.v1.json`) with:

- `Memstream-Event-Id`: the event's `dedup_key`, the same on every delivery of the same
  change (the feed and these retries are at least once: keep the ids you have handled);
- `Memstream-Signature`: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` with the
  shared secret; `verify` below is what a receiver runs.

A 2xx is a delivery. A connection error, a 429 or a 5xx is retried with exponential backoff;
any other status, or the last failed attempt, stops the forwarder without committing that
event, so the next run starts with it again.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import os
import time
from collections.abc import AsyncIterator

import httpx
from tenacity import (
    AsyncRetrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from memstream.client.feed import MemoryFeed
from memstream.client.feed_events import FeedEvent
from memstream.client.recall_async import AsyncRecallClient

SIGNATURE_HEADER = "Memstream-Signature"
EVENT_ID_HEADER = "Memstream-Event-Id"


def sign(secret: bytes, body: bytes, at: int) -> str:
    digest = hmac.new(secret, str(at).encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"t={at},v1={digest}"


def verify(secret: bytes, body: bytes, header: str, now: float, tolerance_s: int = 300) -> bool:
    """Whether `header` signs `body` with `secret`, recently (an old one may be a replay)."""
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    try:
        at = int(parts["t"])
    except (KeyError, ValueError):
        return False
    expected = sign(secret, body, at).split("v1=", 1)[1]
    return abs(now - at) <= tolerance_s and hmac.compare_digest(expected, parts.get("v1", ""))


class Undeliverable(Exception):
    """The webhook refused an event for good (a 4xx other than 429)."""


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, httpx.TransportError):
        return True
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code == 429 or exc.response.status_code >= 500
    return False


async def deliver(
    client: httpx.AsyncClient,
    url: str,
    secret: bytes,
    event: FeedEvent,
    *,
    attempts: int = 6,
    max_wait_s: float = 30.0,
) -> None:
    """POST one event, signed afresh on every attempt, until a 2xx or a lasting failure."""
    body = event.model_dump_json(exclude={"partition", "offset"}).encode()
    retrying = AsyncRetrying(
        retry=retry_if_exception(_transient),
        stop=stop_after_attempt(attempts),
        wait=wait_exponential(multiplier=0.2, max=max_wait_s),
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            headers = {
                "Content-Type": "application/json",
                EVENT_ID_HEADER: event.dedup_key,
                SIGNATURE_HEADER: sign(secret, body, int(time.time())),
            }
            reply = await client.post(url, content=body, headers=headers)
            if 400 <= reply.status_code < 500 and reply.status_code != 429:
                raise Undeliverable(f"{url} answered {reply.status_code} to {event.dedup_key}")
            reply.raise_for_status()


async def forward(
    events: AsyncIterator[FeedEvent], client: httpx.AsyncClient, url: str, secret: bytes
) -> int:
    """Deliver every event in order; returns how many (when the feed ends, in tests)."""
    count = 0
    async for event in events:
        await deliver(client, url, secret, event)
        count += 1
    return count


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--group", required=True, help="the consumer group of this forwarder")
    parser.add_argument("--url", required=True, help="the webhook to POST events to")
    parser.add_argument("--topic-prefix", default="", help="as the workers' MEMSTREAM_TOPIC_PREFIX")
    parser.add_argument("--start", choices=["beginning", "end"], default="end")
    parser.add_argument("--api", required=True, help="the recall API, which opens sealed records")
    args = parser.parse_args()
    secret = os.environ["FEED_WEBHOOK_SECRET"].encode()
    opener = AsyncRecallClient(args.api, api_key=os.environ.get("MEMSTREAM_API_KEY"))
    feed = MemoryFeed(
        args.bootstrap,
        group_id=args.group,
        topic_prefix=args.topic_prefix,
        start=args.start,
        opener=opener,
    )
    async with opener, feed, httpx.AsyncClient(timeout=10) as client:
        await forward(feed, client, args.url, secret)


if __name__ == "__main__":
    asyncio.run(main())
