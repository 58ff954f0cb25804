"""Turns sealed by the SDK's producer, through the real broker, workers, Redis and API: the
turn keys (and the opening of sealed memories) reach only a tenant's own users, the sealed
turns become memories, the turns topic never holds their words, and after the forget nothing
on it can be opened; a turn sealed with a key cached across the forget is dropped and
counted, never dead-lettered."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from memstream.client import (
    AsyncMemstreamProducer,
    AsyncRecallClient,
    MemstreamProducer,
    RecallError,
)
from memstream.contracts.catalog import load_catalog
from memstream.settings import Settings

from .sdk_stack import serving_everything
from .test_forget_everywhere import topic_values
from .test_tenants_stack import ACME_KEY, GLOBEX_KEY, _recalled, _write_keys

pytestmark = pytest.mark.integration

ANN = "acme:ann-sealed"
SAID = ["My marmoset Quibblewick hates thunderstorms.", "Quibblewick sounds sensitive."]
WORDS = ["quibblewick", "marmoset", "thunderstorms", "sensitive"]
FORGOTTEN_METRIC = 'memstream_ingested_events_total{outcome="forgotten"}'


async def _counted_forgotten(
    http: httpx.AsyncClient, at_least: float, timeout_s: float = 60
) -> float:
    """The dropped sealed turns on `/metrics`, polled until at least `at_least`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        lines = (await http.get("/metrics")).text.splitlines()
        count = next((float(v.split()[-1]) for v in lines if v.startswith(FORGOTTEN_METRIC)), 0.0)
        if count >= at_least or loop.time() > deadline:
            return count
        await asyncio.sleep(0.2)


def _refused_by_a_sync_producer(settings: Settings, api_url: str) -> int:
    """The status a sealing `MemstreamProducer` raises for a turn of the forgotten user."""
    with (
        MemstreamProducer(
            settings.broker.bootstrap,
            topic_prefix=settings.broker.topic_prefix,
            idempotent=False,
            seal_turns_api=api_url,
            api_key=ACME_KEY,
        ) as producer,
        pytest.raises(RecallError) as refused,
    ):
        producer.publish_turn(user_id=ANN, session_id="s3", seq=0, text="Quibblewick again.")
    return refused.value.status


async def test_sealed_turns_are_remembered_and_unreadable_after_the_forget(
    settings: Settings, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.json"
    _write_keys(keys)
    tenanted = settings.model_copy(update={"api_key_file": keys})
    async with serving_everything(tenanted, tmp_path) as stack:
        bootstrap, prefix = stack.settings.broker.bootstrap, stack.settings.broker.topic_prefix
        catalog = load_catalog(prefix)
        async with (
            AsyncRecallClient(stack.url, api_key=ACME_KEY, attempts=1) as acme,
            AsyncRecallClient(stack.url, api_key=GLOBEX_KEY, attempts=1) as globex,
            AsyncMemstreamProducer(
                bootstrap, topic_prefix=prefix, idempotent=False, seal_turns=acme
            ) as producer,
        ):
            with pytest.raises(RecallError) as foreign:
                await globex.turn_key(ANN)  # another tenant's user: as if it did not exist
            for seq, text in enumerate(SAID):
                role = "user" if seq == 0 else "assistant"
                await producer.publish_turn(
                    user_id=ANN, session_id="s1", seq=seq, role=role, text=text,
                    ts=f"2024-05-01T09:3{seq}:00+00:00",
                )  # fmt: skip
            remembered = await _recalled(acme, ANN, "What hates thunderstorms?", "Quibblewick")
            sealed_on_topic = await topic_values(bootstrap, catalog.turns)
            # The memories sealed under the same data key open for the user's tenant only.
            memories = [json.loads(v) for v in await topic_values(bootstrap, catalog.memories)]
            sealed_memories = [m for m in memories if m["type"] == "sealed.v1"]
            opened_own = await acme.open_records(sealed_memories)
            opened_foreign = await globex.open_records(sealed_memories)
            await acme.forget_user(ANN)
            with pytest.raises(RecallError) as gone:
                await acme.turn_key(ANN)
            # The producer's cached key outlives the forget: what it seals now opens nowhere.
            await producer.publish_turn(
                user_id=ANN, session_id="s2", seq=0, text="Quibblewick chewed the thunderstorms."
            )
            async with httpx.AsyncClient(base_url=stack.url) as http:
                dropped = await _counted_forgotten(http, at_least=1)
            sync_refused = await asyncio.to_thread(
                _refused_by_a_sync_producer, stack.settings, stack.url
            )
            key_left = await stack.running.container.tree.data_keys({ANN})
        turns = await topic_values(bootstrap, catalog.turns)
        letters = await topic_values(bootstrap, catalog.dlq)

    assert (foreign.value.status, foreign.value.detail) == (404, "no such user")
    assert any("Quibblewick" in m.text for m in remembered.memories)
    sealed = [json.loads(v) for v in sealed_on_topic if b"sealed_turn.v1" in v]
    assert [s["user_id"] for s in sealed] == [ANN, ANN]
    assert sealed_memories and {o.status for o in opened_own} == {"opened"}
    assert {(o.status, o.reason) for o in opened_foreign} == {("invalid", "no such user")}
    assert gone.value.status == sync_refused == 409  # and nothing sent (the topic, below)
    assert dropped == 1
    assert key_left == {ANN: None}  # so no copy of the sealed turns can be opened any more
    # The turns topic from its start: three sealed turns (two before the forget, one after),
    # the forget, and none of the words, before or after.
    docs = [json.loads(v) for v in turns]
    assert sorted(d["type"] for d in docs) == ["forget.v1"] + ["sealed_turn.v1"] * 3
    assert not [w for w in WORDS for v in turns if w in v.decode().lower()]
    assert letters == []  # the dropped turn left no dead letter
