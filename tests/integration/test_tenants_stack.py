"""Tenants on the real pipeline: keys from a file, reach through the SDK and the API, the audit
trail read back from the broker, and what `/metrics` and the logs expose after a run."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaConsumer

from memstream.client import AsyncRecallClient, MemstreamProducer, RecallError
from memstream.client.models import Recall
from memstream.contracts.catalog import load_catalog
from memstream.domain.tenancy import key_digest
from memstream.settings import Settings

from .sdk_stack import API_KEY, serving_everything

pytestmark = pytest.mark.integration

ACME_KEY, GLOBEX_KEY = "acme-stack-key", "globex-stack-key"
ANN, BOB = "acme:ann-7f3q", "globex:bob-9k2w"
# Words found nowhere but in these messages, so any copy of them is a leak.
SAID = {
    ANN: ["Quillbrook marmalade jars line the pantry.", "Lovely, Quillbrook is a fine brand."],
    BOB: ["My tortoise Zembla eats dandelions.", "Zembla sounds like a happy tortoise."],
}
SECRET_WORDS = ["Quillbrook", "marmalade", "Zembla", "dandelions", "tortoise", "pantry"]


def _write_keys(path: Path) -> None:
    tenants = {
        "acme": [{"id": "acme-bot", "sha256": key_digest(ACME_KEY)}],
        "globex": [{"id": "globex-bot", "sha256": key_digest(GLOBEX_KEY)}],
    }
    path.write_text(json.dumps({"tenants": tenants}))


def _publish(settings: Settings) -> None:
    with MemstreamProducer(
        settings.broker.bootstrap, topic_prefix=settings.broker.topic_prefix, idempotent=False
    ) as producer:
        for user, lines in SAID.items():
            for seq, text in enumerate(lines):
                role = "user" if seq % 2 == 0 else "assistant"
                producer.publish_turn(
                    user_id=user, session_id="s1", seq=seq, role=role, text=text,
                    ts=f"2024-05-01T09:3{seq}:00+00:00",
                )  # fmt: skip


async def _recalled(
    client: AsyncRecallClient, user: str, query: str, word: str, timeout_s: float = 300
) -> Recall:
    """Recall until a memory holding `word` is back (the L1 is written asynchronously)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        answer = await client.recall(user, query)
        if any(word in m.text for m in answer.memories):
            return answer
        if loop.time() > deadline:
            raise TimeoutError(f"no memory of {user} with {word!r} after {timeout_s:.0f} s")
        await asyncio.sleep(0.5)


async def _audit_records(settings: Settings, expected: int, timeout_s: float = 30) -> list[Any]:
    """The audit topic from its start, through the broker, until `expected` records."""
    topic = load_catalog(settings.broker.topic_prefix).audit.name
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=settings.broker.bootstrap, auto_offset_reset="earliest"
    )
    await consumer.start()
    found: list[tuple[bytes | None, bytes]] = []
    try:
        deadline = asyncio.get_running_loop().time() + timeout_s
        while len(found) < expected and asyncio.get_running_loop().time() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                found += [(r.key, r.value) for r in records]
    finally:
        await consumer.stop()
    return found


async def test_tenant_keys_the_audit_trail_and_what_is_exposed(
    settings: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys = tmp_path / "keys.json"
    _write_keys(keys)
    caplog.set_level(logging.INFO)
    tenanted = settings.model_copy(update={"api_key_file": keys})
    async with serving_everything(tenanted, tmp_path) as stack:
        await asyncio.to_thread(_publish, stack.settings)
        # Both users' memories written before any probe: a foreign user must answer 404
        # because it is foreign, not because it is not there yet, and the operator's list
        # must find both.
        async with AsyncRecallClient(stack.url, api_key=GLOBEX_KEY) as globex:
            await _recalled(globex, BOB, "What does the tortoise eat?", "Zembla")
        async with AsyncRecallClient(stack.url, api_key=ACME_KEY, attempts=1) as acme:
            own = await _recalled(acme, ANN, "What lines the pantry?", "Quillbrook")
            with pytest.raises(RecallError) as foreign:
                await acme.recall(BOB, "What does the tortoise eat?")
            with pytest.raises(RecallError) as ghost:
                await acme.recall("globex:nobody", "What does the tortoise eat?")
            with pytest.raises(RecallError) as foreign_forget:
                await acme.forget_user(BOB)
        async with httpx.AsyncClient(base_url=stack.url) as http:
            acme_auth = {"Authorization": f"Bearer {ACME_KEY}"}
            listed = (await http.get("/v1/users", params={"prefix": ""}, headers=acme_auth)).json()
            outside = await http.get("/v1/users", params={"prefix": "globex:"}, headers=acme_auth)
            everyone = await http.get("/v1/users", headers={"Authorization": f"Bearer {API_KEY}"})
            async with AsyncRecallClient(stack.url, api_key=GLOBEX_KEY) as globex:
                kept = await _recalled(globex, BOB, "What does the tortoise eat?", "Zembla")
            forgot = await http.delete(f"/v1/users/{ANN}", headers=acme_auth)
            scraped = (await http.get("/metrics")).text
        audit = await _audit_records(stack.settings, expected=6)

    assert {m.user_id for m in own.memories} == {ANN}
    assert (foreign.value.status, foreign.value.detail) == (404, "no such user")
    assert (ghost.value.status, ghost.value.detail) == (404, "no such user")
    assert foreign_forget.value.status == 404
    assert [u["user_id"] for u in listed["items"]] == [ANN]
    assert outside.json()["items"] == []
    assert {u["user_id"] for u in everyone.json()["items"]} == {ANN, BOB}
    assert {m.user_id for m in kept.memories} == {BOB}  # the refused forget removed nothing
    assert forgot.status_code == 200

    # The audit trail, as the broker holds it: valid records, ids and outcomes, no text.
    catalog = load_catalog(stack.settings.broker.topic_prefix)
    records = [json.loads(value) for _, value in audit]
    assert all(catalog.audit.validate(value) == [] for _, value in audit)
    summary = [(r["action"], r["actor"], r["tenant"], r["user_id"], r["outcome"]) for r in records]
    assert summary == [
        ("keys.loaded", "memstream", None, None, "done"),
        ("user.forget", "acme-bot", "acme", BOB, "refused"),
        ("users.list", "acme-bot", "acme", None, "done"),
        ("users.list", "acme-bot", "acme", None, "done"),
        ("users.list", f"key-{key_digest(API_KEY)[:12]}", None, None, "done"),
        ("user.forget", "acme-bot", "acme", ANN, "done"),
    ]
    assert [key for key, _ in audit][1] == b"acme"
    raw_audit = b"".join(value for _, value in audit).decode()
    assert not [w for w in SECRET_WORDS if w in raw_audit]
    assert ACME_KEY not in raw_audit and key_digest(ACME_KEY) not in raw_audit

    # What /metrics and the logs at INFO and above expose: no user id, no word said.
    assert not [s for s in [ANN, BOB, "ann-7f3q", "bob-9k2w", *SECRET_WORDS] if s in scraped]
    assert 'memstream_api_key_file_reloads_total{outcome="loaded"} 1.0' in scraped
    logged = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert logged, "the run logs at INFO"
    leaks = [r.getMessage() for r in logged if any(w in r.getMessage() for w in SECRET_WORDS)]
    assert leaks == []
    assert not [r for r in logged if ACME_KEY in r.getMessage() or GLOBEX_KEY in r.getMessage()]
