"""A rebuild re-derives knowledge, through the real broker, Faust workers, Redis and Qdrant.

Maya's conversation (Porto in January, Berlin in April) is written with the knowledge write
off: its L1s record no extraction and no fact is stored. The workers then run with the
write on (another extraction), and `memstream rebuild` of the user writes every L1 again
with the facts it says, and the profiles above with them.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

from tests.integration.test_knowledge_write import (
    APR,
    MAYA,
    USER,
    conversation,
    publish,
    runtime,
    written,
)

from memstream.bootstrap import Container
from memstream.domain.calendar import window_for
from memstream.domain.derivation import NO_EXTRACTION, RULES_EXTRACTION
from memstream.domain.ids import window_node_id
from memstream.domain.models import Level, MemoryNode
from memstream.domain.profile_facts import CHANGED, is_knowledge_line
from memstream.entrypoints.cli_audit import os_user
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.rebuild_command import _run as run_command
from memstream.entrypoints.runner import WRITE_PATH, run_parts

from .test_tenants_stack import _audit_records

__all__ = ["runtime"]  # the fixture, shared with the knowledge-write test


async def leaves(runtime: Container) -> list[MemoryNode]:
    ids = await runtime.tree.level_ids(USER, Level.SEGMENT, limit=1000)
    return await runtime.tree.get_many(USER, ids)


async def april_profile(runtime: Container) -> MemoryNode:
    start, _ = window_for(Level.MONTH, APR, "UTC")
    stored = await runtime.tree.get(USER, window_node_id(USER, Level.MONTH, start))
    assert stored is not None
    return stored.node


async def test_a_rebuild_under_another_extraction_derives_the_facts_again(
    runtime: Container, tmp_path: Path
) -> None:
    off = runtime.settings.model_copy(update={"knowledge": False})
    async with run_parts(replace(runtime, settings=off), WRITE_PATH, fast_rebalance=True):
        await publish(runtime, written(tmp_path / "conversation.jsonl", conversation()))
    before = {n.id: n for n in await leaves(runtime)}
    assert {n.derivation.extraction for n in before.values() if n.derivation} == {NO_EXTRACTION}
    assert await runtime.tree.facts(USER) == []
    assert not any(is_knowledge_line(f.text) for f in (await april_profile(runtime)).facts)

    on = off.model_copy(update={"knowledge": True, "rebuild_chunk_leaves": 2})
    async with run_parts(replace(runtime, settings=on), WRITE_PATH, fast_rebalance=True):
        await asyncio.wait_for(run_command(on, [USER], False, None, None, True), 120)
        await wait_caught_up(runtime, [USER], timeout_s=120)
    after = {n.id: n for n in await leaves(runtime)}
    assert {i: n.version for i, n in after.items()} == {i: n.version + 1 for i, n in before.items()}
    assert {n.derivation.extraction for n in after.values() if n.derivation} == {RULES_EXTRACTION}
    [berlin] = await runtime.tree.facts(USER, MAYA)
    assert (berlin.value, berlin.source_ids) == ("Berlin", ("berlin",))
    porto, _ = await runtime.tree.fact_history(USER, MAYA, "lives_in")
    assert (porto.value, porto.superseded_by) == ("Porto", berlin.fact_id)
    profile = await april_profile(runtime)
    assert f"- {CHANGED} Maya moved from Porto to Berlin (1 March 2024)" in profile.text

    # `memstream rebuild --all --no-wait --actor ops-ann`, then the audit trail of both runs.
    await run_command(on, [], True, None, None, False, "ops-ann")
    audit = [json.loads(value) for _, value in await _audit_records(on, expected=2)]
    assert [(r["action"], r["user_id"], r["users"], r["outcome"], r["origin"]) for r in audit] == [
        ("user.rebuild", USER, None, "accepted", "cli"),
        ("users.rebuild", None, 1, "accepted", "cli"),
    ]
    assert [r["actor"] for r in audit] == [os_user(), "ops-ann"]
