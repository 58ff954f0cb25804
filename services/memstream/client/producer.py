"""Publishing chat events to memstream's turns topic, validated, keyed and batched.

    async with AsyncMemstreamProducer("broker:9092") as producer:
        receipt = await producer.publish_turn(user_id="ann", session_id="s1", seq=0, text="Hi")
        # receipt.token: pass it to a recall as `after` to read this message (read-your-writes)
    # leaving the block flushes: every event sent is acknowledged by the broker

    with MemstreamProducer("broker:9092") as producer:   # the same, for code without a loop
        producer.publish_turn(user_id="ann", session_id="s1", seq=0, text="Hi")

What makes it safe to use from an agent:
- every value is checked against the catalog before it is sent (`InvalidEvent` names the
  fields at fault, in the words the workers would use on the dead-letter topic);
- the key is the user id and aiokafka's default partitioner hashes it with murmur2, as
  Java's and Faust's do, so one user's events land in one partition, in order;
- `acks=all` with the idempotent producer: the broker drops a batch the client retries
  after a lost acknowledgement, and the event id, drawn once per call before the send,
  lets the workers drop anything sent twice by the caller;
- sends are batched: aiokafka has one request in flight per broker, and what is sent
  meanwhile goes in the next one; `flush()` (and closing) waits for every ack and raises
  the first delivery error; `publish_turn` waits for its own ack, since its receipt names
  where the broker put the message (`domain.write_token`, docs/read-your-writes.md). So
  `linger_ms` is 0 by default: a linger only holds back the sends of an idle producer,
  which are the awaited ones (bulk `publish()` batches as well without it).

The sync flavour runs the async one on a private event loop in a daemon thread: it needs no
second Kafka client library.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine, Iterable, Mapping
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError, UnknownError

from memstream.client.events import (
    InvalidEvent,
    checked,
    forget_event,
    rebuild_event,
    session_end_event,
    turn_event,
)
from memstream.client.recall_async import AsyncRecallClient
from memstream.client.receipt import Receipt
from memstream.client.tracing import producing
from memstream.client.turn_sealing import DEFAULT_TTL_S, TurnKeySource, TurnSealer
from memstream.contracts.catalog import Catalog, ValidationProblem, load_catalog
from memstream.contracts.records import encode_value
from memstream.contracts.tenant_topics import TurnsRouting
from memstream.domain.tenancy import owns
from memstream.domain.write_token import WritePosition, issue

T = TypeVar("T")
DEFAULT_LINGER_MS = 0
NO_PRODUCER_IDS = (
    "the broker refused an idempotent producer id (InitProducerId); a broker without "
    "idempotence, such as the embedded one of `memstream up`, needs idempotent=False (the "
    "workers still drop a resent event by its event id)"
)


class AsyncMemstreamProducer:
    """Sends events to the catalog's topics with aiokafka. Start it (or `async with`) first."""

    def __init__(
        self,
        bootstrap: str,
        *,
        topic_prefix: str = "",
        catalog: Catalog | None = None,
        linger_ms: int = DEFAULT_LINGER_MS,
        idempotent: bool = True,
        client_id: str = "memstream-sdk",
        write_token_key: str | None = None,
        tenant: str | None = None,
        seal_turns: TurnKeySource | None = None,
        turn_key_ttl_s: float = DEFAULT_TTL_S,
        tenant_topics: Iterable[str] = (),
        **kafka_options: Any,
    ) -> None:
        """`write_token_key`: the deployment's MEMSTREAM_API_WRITE_TOKEN_KEY, which signs the
        receipts' tokens (none: they are only checksummed, as the API then expects).
        `tenant`: every event must name a user of that tenant (`tenant:user`), else
        `InvalidEvent` (a gateway that produces for one tenant at a time).
        `seal_turns`: where the users' turn keys come from (an `AsyncRecallClient`): each
        turn is then sent sealed, so that a forget leaves no readable copy of it on the turns
        topic (`client.turn_sealing`); the keys are cached for `turn_key_ttl_s`.
        `tenant_topics`: the deployment's MEMSTREAM_TURNS_TOPIC_PER_TENANT (experimental): a
        user of one of these tenants has its events sent to its tenant's turns topic."""
        self.catalog = catalog or load_catalog(topic_prefix)
        self._routing = TurnsRouting.of(self.catalog.turns.name, tenant_topics)
        self._tenant = tenant
        self._sealer = TurnSealer(seal_turns, ttl_s=turn_key_ttl_s) if seal_turns else None
        self._token_key = (write_token_key or "").encode()
        self._options: dict[str, Any] = {
            "bootstrap_servers": bootstrap,
            "client_id": client_id,
            "acks": "all",
            "enable_idempotence": idempotent,
            "linger_ms": linger_ms,
            **kafka_options,
        }
        self._producer: AIOKafkaProducer | None = None
        self._pending: list[asyncio.Future[Any]] = []

    async def __aenter__(self) -> AsyncMemstreamProducer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def start(self) -> None:
        if self._producer is None:
            producer = AIOKafkaProducer(**self._options)
            try:
                await producer.start()
            except KafkaError as error:
                await producer.stop()
                if self._options["enable_idempotence"] and isinstance(error, UnknownError):
                    raise RuntimeError(NO_PRODUCER_IDS) from error
                raise
            self._producer = producer

    async def close(self) -> None:
        """Flush, then stop the client (the stop runs even when the flush fails)."""
        if self._producer is None:
            return
        try:
            await self.flush()
        finally:
            producer, self._producer = self._producer, None
            await producer.stop()

    async def publish(self, value: Mapping[str, Any]) -> None:
        """Validate any catalog event and queue it for sending; `flush()` waits for the ack."""
        self._pending.append(await self._send(value))

    async def _send(self, value: Mapping[str, Any]) -> asyncio.Future[Any]:
        topic, key = checked(self.catalog, value)
        if topic == self._routing.shared:
            topic = self._routing.topic_for(key)
        if self._tenant is not None and not owns(self._tenant, key):
            problem = (
                f"not a user of the tenant {self._tenant!r} (ids start with '{self._tenant}:')"
            )
            raise InvalidEvent([ValidationProblem("user_id", problem)])
        if self._producer is None:
            raise RuntimeError("the producer is not started (use `async with` or start())")
        sent = await self._sealer.sealed(value) if self._sealer is not None else value
        with producing(topic, str(value["type"]), key) as headers:
            return await self._producer.send(
                topic, value=encode_value(dict(sent)), key=key.encode(), headers=headers or None
            )

    async def publish_receipted(self, value: Mapping[str, Any]) -> Receipt:
        """Send a turn and wait for its ack: the receipt names where the broker put it."""
        if value.get("type") != "turn.v1":
            raise ValueError("only a turn.v1 gets a receipt; publish() sends the other events")
        sent = await (await self._send(value))
        # A tenant's topic is named in the token: its partition numbers are the shared
        # topic's too (`domain.write_token`).
        topic = None if sent.topic == self._routing.shared else sent.topic
        position = WritePosition(sent.partition, sent.offset, int(time.time() * 1000), topic)
        token = issue(str(value["user_id"]), position, self._token_key)
        return Receipt(str(value["event_id"]), token)

    async def publish_turn(
        self,
        *,
        user_id: str,
        session_id: str,
        seq: int,
        text: str,
        role: str = "user",
        speaker: str | None = None,
        ts: datetime | str | None = None,
        tz: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        event_id: str | None = None,
        expires_at: datetime | str | None = None,
        flush: bool = False,
    ) -> Receipt:
        """Send one message of a conversation and wait for its ack; returns its receipt (the
        event id, a new uuid if not given, and the write token). With `expires_at`, memstream
        forgets the message at that time; with `flush`, a user's message is written as a
        memory at once instead of waiting for the reply it would be gathered with."""
        value = turn_event(
            user_id=user_id,
            session_id=session_id,
            seq=seq,
            text=text,
            role=role,
            speaker=speaker,
            ts=ts,
            tz=tz,
            metadata=metadata,
            event_id=event_id,
            expires_at=expires_at,
            flush=flush,
        )
        return await self.publish_receipted(value)

    async def end_session(
        self, *, user_id: str, session_id: str, ts: datetime | str | None = None
    ) -> None:
        """Close a session now, so its summary is written without waiting for the idle timeout."""
        await self.publish(session_end_event(user_id=user_id, session_id=session_id, ts=ts))

    async def forget(self, *, user_id: str) -> None:
        """Ask the workers to forget a user (the recall API's DELETE also clears the stores)."""
        await self.publish(forget_event(user_id=user_id))

    async def rebuild(self, *, user_id: str, rebuild_id: str | None = None) -> str:
        """Ask the workers to re-derive a user's memories; returns the rebuild's id (its
        progress: `GET /v1/users/{user_id}/rebuilds/{id}` on the recall API)."""
        value = rebuild_event(user_id=user_id, rebuild_id=rebuild_id)
        await self.publish(value)
        return str(value["rebuild_id"])

    async def flush(self) -> None:
        """Wait until the broker has acknowledged everything queued; raise the first failure."""
        pending, self._pending = self._pending, []
        results = await asyncio.gather(*pending, return_exceptions=True)
        failed = next((r for r in results if isinstance(r, BaseException)), None)
        if failed is not None:
            raise failed


class MemstreamProducer:
    """`AsyncMemstreamProducer` for synchronous code: the same methods, blocking.

    Connects on construction; `close()` (or leaving a `with` block) flushes and disconnects.
    """

    def __init__(
        self,
        bootstrap: str,
        *,
        timeout_s: float = 60.0,
        seal_turns_api: str | None = None,
        api_key: str | None = None,
        **options: Any,
    ) -> None:
        """`seal_turns_api` (the recall API's URL) and its `api_key`: turns are sent sealed,
        their keys asked of that API (`AsyncMemstreamProducer`'s `seal_turns`)."""
        self._timeout_s = timeout_s
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="memstream-producer", daemon=True
        )
        self._thread.start()
        # The producer's own client: used on the producer's loop only, closed with it.
        self._api = AsyncRecallClient(seal_turns_api, api_key=api_key) if seal_turns_api else None
        if self._api is not None:
            options["seal_turns"] = self._api
        self._async = AsyncMemstreamProducer(bootstrap, **options)
        try:
            self._call(self._async.start())
        except BaseException:
            self._stop_loop()
            raise

    @property
    def catalog(self) -> Catalog:
        return self._async.catalog

    def __enter__(self) -> MemstreamProducer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _call(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(self._timeout_s)

    def publish(self, value: Mapping[str, Any]) -> None:
        self._call(self._async.publish(value))

    def publish_turn(
        self,
        *,
        user_id: str,
        session_id: str,
        seq: int,
        text: str,
        role: str = "user",
        speaker: str | None = None,
        ts: datetime | str | None = None,
        tz: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        event_id: str | None = None,
        expires_at: datetime | str | None = None,
        flush: bool = False,
    ) -> Receipt:
        # Built here, in the caller's thread, so the id is fixed before anything is sent.
        value = turn_event(
            user_id=user_id,
            session_id=session_id,
            seq=seq,
            text=text,
            role=role,
            speaker=speaker,
            ts=ts,
            tz=tz,
            metadata=metadata,
            event_id=event_id,
            expires_at=expires_at,
            flush=flush,
        )
        return self._call(self._async.publish_receipted(value))

    def end_session(
        self, *, user_id: str, session_id: str, ts: datetime | str | None = None
    ) -> None:
        self.publish(session_end_event(user_id=user_id, session_id=session_id, ts=ts))

    def forget(self, *, user_id: str) -> None:
        self.publish(forget_event(user_id=user_id))

    def rebuild(self, *, user_id: str, rebuild_id: str | None = None) -> str:
        value = rebuild_event(user_id=user_id, rebuild_id=rebuild_id)
        self.publish(value)
        return str(value["rebuild_id"])

    def flush(self) -> None:
        self._call(self._async.flush())

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._call(self._async.close())
            if self._api is not None:
                self._call(self._api.aclose())
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=self._timeout_s)
        self._loop.close()
