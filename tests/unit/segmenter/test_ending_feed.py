"""The change feed reports what an ending told without its attribute closes ("I've left the
Magpies" closes "plays for the Magpies"), and what forgetting it re-opens: over random
histories of writes, rewrites and removals, the versions a consumer holds from the feed's
events are, after every commit, the versions derived whole from the user's L1s."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.unit.domain.knowledge_histories import ENDINGS_SAID, History
from tests.unit.fakes import FakeTree

from memstream.contracts.feed_events import FACT, FACT_REMOVED
from memstream.domain.facts import ENDED
from memstream.domain.knowledge import fact_versions, knowledge_change
from memstream.domain.models import Level, MemoryNode, SourceMessage
from memstream.segmenter.knowledge import fact_outbox

USER = "ana"
T0 = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)


Held = dict[str, tuple[Any, ...]]  # fact id -> what the feed says of the version


def apply(held: Held, events: list[dict[str, Any]]) -> None:
    for value in events:
        if value["type"] == FACT:
            held[value["fact_id"]] = _seen(value)
        elif value["type"] == FACT_REMOVED:
            for fact_id in value["fact_ids"]:
                held.pop(fact_id, None)


def _seen(value: dict[str, Any]) -> tuple[Any, ...]:
    return (value["value"], value["negated"], value["valid_to"], value["superseded_by"])


def derived(tree: FakeTree) -> Held:
    return {
        v.fact_id: (v.value, v.negated, v.valid_to and v.valid_to.isoformat(), v.superseded_by)
        for v in fact_versions(tree._observations(USER))
    }


async def commit(
    tree: FakeTree, written: Sequence[MemoryNode], removed: Sequence[MemoryNode] = ()
) -> list[dict[str, Any]]:
    """The segmenter's fact outbox for one commit, its knowledge then stored; the events."""
    events, change = await fact_outbox(tree, "memories", USER, knowledge_change(written, removed))
    tree._apply_knowledge(USER, change)
    return [e.value for e in events]


@pytest.mark.parametrize("seed", range(16))
async def test_the_feed_replays_the_versions_endings_close_and_reopen(seed: int) -> None:
    history = History(random.Random(seed), user=USER, said=ENDINGS_SAID)
    tree = FakeTree()
    held: Held = {}
    closed_by_ending = 0
    for _ in range(50):
        events = await commit(tree, *history.step())
        apply(held, events)
        assert held == derived(tree)
        closed_by_ending += sum(
            e["type"] == "fact_superseded.v1" and e["attribute"] != "lives_in" for e in events
        )
    assert closed_by_ending  # the histories close values by endings told without attribute


def leaf(leaf_id: str, text: str, day: int, version: int = 1) -> MemoryNode:
    at = T0 + timedelta(days=day)
    message = SourceMessage(f"{leaf_id}-m", "Maya", "user", text, at)
    return MemoryNode(
        id=leaf_id,
        user_id=USER,
        level=Level.SEGMENT,
        t_start=at,
        t_end=at,
        text=text,
        source_ids=(message.event_id,),
        messages=(message,),
        version=version,
    )


async def test_an_ending_supersedes_the_version_it_names_and_its_forget_reopens_it() -> None:
    tree = FakeTree()
    magpies = leaf("l1", "I play for the Magpies.", 0)
    await commit(tree, [magpies, leaf("l2", "I live in Porto.", 1)])
    left = leaf("l3", "I've left the Magpies.", 5)
    events = await commit(tree, [left])
    [superseded] = [e for e in events if e["type"] == "fact_superseded.v1"]
    assert (superseded["attribute"], superseded["value"]) == ("team", "the Magpies")
    assert superseded["valid_to"] == (T0 + timedelta(days=5)).isoformat()
    closing = [e for e in events if e["fact_id"] == superseded["superseded_by"]]
    assert closing and closing[0]["negated"] and closing[0]["attribute"] == "team"
    # The ending's own pseudo-attribute never reaches the feed, nor Porto's slot.
    assert all(e.get("attribute") not in (ENDED, "lives_in") for e in events)

    events = await commit(tree, [], [left])
    [reopened] = [e for e in events if e["type"] == "fact_reopened.v1"]
    assert reopened["value"] == "the Magpies"
    assert reopened["was_superseded_by"] == superseded["superseded_by"]
    [removed] = [e for e in events if e["type"] == FACT_REMOVED]
    assert removed["fact_ids"] == [superseded["superseded_by"]]


async def test_a_late_statement_before_a_stored_ending_is_closed_by_it() -> None:
    tree = FakeTree()
    await commit(tree, [leaf("l1", "I play for the Hawks.", 0)])
    await commit(tree, [leaf("l2", "I've left the Magpies.", 10)])
    # Said later, dated before the ending: the head alone would keep it holding.
    held: Held = {}
    apply(held, await commit(tree, [leaf("l3", "I play for the Magpies.", 5)]))
    magpies = [v for v in held.values() if v[0] == "the Magpies" and not v[1]]
    assert magpies and magpies[0][2] == (T0 + timedelta(days=10)).isoformat()
