"""The `memstream` command's operations on users, on the audit trail read back from the
broker: here `memstream ingest` of a file carrying forgets and a rebuild (`memstream rebuild`
and `memstream repair` are checked in test_rebuild_knowledge.py and test_repair.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstream.contracts.catalog import load_catalog
from memstream.entrypoints.cli import app
from memstream.settings import Settings

from .test_tenants_stack import _audit_records

pytestmark = pytest.mark.integration

ANN = "acme:ann-audited"
TS = "2024-05-01T09:30:00+00:00"
EVENTS = [
    {"type": "turn.v1", "event_id": "e1", "user_id": ANN, "session_id": "s1", "seq": 0,
     "speaker": "Ann", "role": "user", "text": "Hello.", "ts": TS},
    {"type": "forget.v1", "user_id": ANN, "message_ids": ["e1"]},
    {"type": "rebuild.v1", "user_id": ANN, "rebuild_id": "r1"},
    {"type": "forget.v1", "user_id": ANN},
]  # fmt: skip


async def test_ingest_records_the_forgets_and_rebuilds_it_publishes(
    settings: Settings, tmp_path: Path
) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for e in EVENTS))
    env = {
        "MEMSTREAM_KAFKA_BOOTSTRAP": settings.broker.bootstrap,
        "MEMSTREAM_TOPIC_PREFIX": settings.broker.topic_prefix,
    }
    args = ["ingest", str(events), "--actor", "ops-ann"]
    ran = await asyncio.to_thread(CliRunner().invoke, app, args, env=env)
    assert ran.exit_code == 0, ran.output

    audit = await _audit_records(settings, expected=3)
    catalog = load_catalog(settings.broker.topic_prefix)
    assert all(catalog.audit.validate(value) == [] for _, value in audit)
    records = [json.loads(value) for _, value in audit]
    assert [(r["action"], r["user_id"], r["outcome"]) for r in records] == [
        ("messages.forget", ANN, "accepted"),
        ("user.rebuild", ANN, "accepted"),
        ("user.forget", ANN, "accepted"),
    ]
    assert {(r["actor"], r["origin"], r["tenant"]) for r in records} == {("ops-ann", "cli", None)}
