"""What the workers put on the change feed is valid in the catalog and typed in the SDK."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import TypeAdapter
from tests.unit.domain.test_fact_changes import lives_in

from memstream.client.feed_events import (
    FactRemoved,
    FactReopened,
    FactSuperseded,
    FactWritten,
    FeedEvent,
    MemoryRemoved,
    MemoryWritten,
    RebuildFinished,
    UserForgotten,
    WindowConsolidated,
)
from memstream.contracts.catalog import load_catalog
from memstream.contracts.codec import memory_event, removed_event
from memstream.contracts.feed_events import (
    fact_events,
    rebuild_finished_event,
    user_forgotten_event,
    window_consolidated_event,
)
from memstream.domain.derivation import Derivation
from memstream.domain.fact_changes import fact_changes
from memstream.domain.knowledge import KnowledgeChange, LeafKnowledge
from memstream.domain.models import Fact, Level, MemoryNode, RebuildRequested
from memstream.domain.rebuild import plan_job

AT = datetime(2024, 5, 1, 9, 30, tzinfo=UTC)
PORTO, BERLIN = lives_in("Porto", AT - timedelta(days=60), "m1"), lives_in("Berlin", AT, "m2")
MOVED_IN = KnowledgeChange(leaves={"l2": LeafKnowledge((BERLIN,))}, first_written=frozenset({"l2"}))
DERIVED = Derivation(backend="offline", model="rules", prompt_version="p1", embedder="hashing:8")
DAY = MemoryNode(
    id="day-1",
    user_id="ann",
    level=Level.DAY,
    t_start=AT,
    t_end=AT,
    text="On 1 May 2024 Ann adopted a cat.",
    source_ids=("m1", "m2"),
    version=2,
    facts=(Fact("Ann adopted a cat.", ("m1",), AT),),
    derivation=DERIVED,
)
LEAF = replace(DAY, id="leaf-1", level=Level.SEGMENT, facts=(), derivation=None, version=1)
JOB = replace(
    plan_job(RebuildRequested("ann", "r1", None, tuple(Level)), DERIVED, [LEAF], [], []),
    done=1,
    rewritten=1,
    finished=True,
)
MOVED = {"l1": (PORTO,), "l2": (BERLIN,)}  # Ann's sister lived in Porto, then in Berlin
SUPERSEDING = fact_events("ann", fact_changes({"l1": (PORTO,)}, MOVED_IN))
REOPENING = fact_events("ann", fact_changes(MOVED, KnowledgeChange(dropped=("l2",))))
EVENTS = {
    MemoryWritten: memory_event(DAY),
    MemoryRemoved: removed_event("ann", ["leaf-1"]),
    UserForgotten: user_forgotten_event("ann", 3, 41, AT.timestamp()),
    WindowConsolidated: window_consolidated_event(DAY),
    RebuildFinished: rebuild_finished_event("ann", JOB),
    FactWritten: SUPERSEDING[0],
    FactSuperseded: SUPERSEDING[-1],
    FactRemoved: REOPENING[0],
    FactReopened: REOPENING[-1],
}
_FEED: TypeAdapter[FeedEvent] = TypeAdapter(FeedEvent)


@pytest.mark.parametrize("kind", list(EVENTS), ids=lambda k: k.__name__)
def test_every_event_the_workers_publish_is_valid_and_typed(kind: type) -> None:
    value = EVENTS[kind]
    assert load_catalog().memories.validate(value) == []
    assert isinstance(_FEED.validate_python(value), kind)


def test_a_memory_carries_its_derivation_facts_and_a_key_per_version() -> None:
    event = _FEED.validate_python(memory_event(DAY))
    assert isinstance(event, MemoryWritten)
    assert event.derivation is not None and event.derivation.prompt_version == "p1"
    assert [(f.text, f.source_ids) for f in event.facts] == [("Ann adopted a cat.", ["m1"])]
    assert event.dedup_key == "memory:day-1:v2"
    newer = _FEED.validate_python(memory_event(replace(DAY, version=3)))
    assert newer.dedup_key != event.dedup_key
    assert _FEED.validate_python(memory_event(LEAF)).derivation is None


def test_a_replayed_forget_has_the_same_key_and_another_forget_another() -> None:
    first = _FEED.validate_python(user_forgotten_event("ann", 3, 41, AT.timestamp()))
    again = _FEED.validate_python(user_forgotten_event("ann", 3, 41, AT.timestamp() + 60))
    later = _FEED.validate_python(user_forgotten_event("ann", 3, 97, AT.timestamp()))
    assert first.dedup_key == again.dedup_key != later.dedup_key


def test_removals_are_keyed_by_what_they_remove_in_any_order() -> None:
    one = _FEED.validate_python(removed_event("ann", ["a", "b"]))
    same = _FEED.validate_python(removed_event("ann", ["b", "a"]))
    other = _FEED.validate_python(removed_event("ann", ["a"]))
    assert one.dedup_key == same.dedup_key != other.dedup_key


def test_a_supersession_comes_after_the_versions_it_links() -> None:
    kinds = [e["type"] for e in SUPERSEDING]
    assert kinds == ["fact.v1", "fact.v1", "fact_superseded.v1"]
    closed = _FEED.validate_python(SUPERSEDING[-1])
    assert isinstance(closed, FactSuperseded)
    assert (closed.value, closed.superseded_by) == ("Porto", BERLIN.fact_id)
    written = [_FEED.validate_python(e) for e in SUPERSEDING[:2]]
    assert [w.holds for w in written if isinstance(w, FactWritten)] == [False, True]


def test_a_forget_removes_a_version_and_reopens_the_one_it_had_closed() -> None:
    assert [e["type"] for e in REOPENING] == ["fact_removed.v1", "fact.v1", "fact_reopened.v1"]
    reopened = _FEED.validate_python(REOPENING[-1])
    assert isinstance(reopened, FactReopened) and reopened.was_superseded_by == BERLIN.fact_id
    porto = _FEED.validate_python(REOPENING[1])
    assert isinstance(porto, FactWritten) and porto.holds


def test_a_fact_version_is_keyed_by_what_it_says_not_where_it_was_read() -> None:
    open_ = _FEED.validate_python(REOPENING[1])
    closed = _FEED.validate_python(SUPERSEDING[0])
    again = _FEED.validate_python({**REOPENING[1], "partition": 2, "offset": 9})
    assert open_.dedup_key == again.dedup_key != closed.dedup_key
