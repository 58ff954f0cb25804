"""What the segmenter's transaction queues of the knowledge: as little as the change needs,
and a new revision whenever it changes anything."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from memstream.adapters.redis import keys
from memstream.adapters.redis.knowledge import queue_knowledge
from memstream.domain.fact_changes import fact_changes
from memstream.domain.knowledge import KnowledgeChange, knowledge_change
from memstream.domain.models import Level, MemoryNode, SourceMessage

AT = datetime(2024, 1, 10, 9, 0, tzinfo=UTC)


class RecordingPipe:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, command: str) -> Any:
        return lambda *args, **kwargs: self.calls.append((command, args))

    @property
    def commands(self) -> list[tuple[str, str]]:
        return [(command, args[0].removeprefix("p:")) for command, args in self.calls]


def l1(leaf_id: str, text: str, version: int = 1) -> MemoryNode:
    return MemoryNode(
        id=leaf_id,
        user_id="u",
        level=Level.SEGMENT,
        t_start=AT,
        t_end=AT,
        text=text,
        source_ids=(f"m-{leaf_id}",),
        messages=(SourceMessage(f"m-{leaf_id}", "Maya", "user", text, AT),),
        version=version,
    )


def queued(change: KnowledgeChange) -> list[tuple[str, str]]:
    pipe = RecordingPipe()
    queue_knowledge(pipe, "p:", change)
    return pipe.commands


def test_a_first_write_saying_nothing_queues_nothing() -> None:
    assert queued(knowledge_change([l1("a", "ok"), l1("b", "sounds good")])) == []


def test_a_first_write_sets_what_it_says_and_clears_nothing() -> None:
    names_only = l1("a", "Nate came over.")  # a surface, no fact
    assert queued(knowledge_change([names_only, l1("b", "ok")])) == [
        ("hset", keys.ENTITIES),
        ("set", keys.KNOWLEDGE_REVISION),
        ("rpush", keys.KNOWLEDGE_CHANGES),
        ("ltrim", keys.KNOWLEDGE_CHANGES),
    ]


def test_a_leaf_written_again_clears_what_it_no_longer_says() -> None:
    again = replace(l1("a", "ok"), version=2)
    assert queued(knowledge_change([again])) == [
        ("hdel", keys.FACTS),
        ("hdel", keys.ENTITIES),
        ("delete", keys.FACT_HEADS),  # heads not derived by this writer: none may be stale
        ("set", keys.KNOWLEDGE_REVISION),
        ("rpush", keys.KNOWLEDGE_CHANGES),
        ("ltrim", keys.KNOWLEDGE_CHANGES),
    ]
    assert queued(KnowledgeChange(dropped=("a",))) == [
        ("hdel", keys.FACTS),
        ("hdel", keys.ENTITIES),
        ("delete", keys.FACT_HEADS),  # heads not derived by this writer: none may be stale
        ("set", keys.KNOWLEDGE_REVISION),
        ("rpush", keys.KNOWLEDGE_CHANGES),
        ("ltrim", keys.KNOWLEDGE_CHANGES),
    ]


def test_the_new_revision_is_logged_with_the_leaves_it_changed() -> None:
    pipe = RecordingPipe()
    again = replace(l1("a", "I live in Porto."), version=2)  # written again
    queue_knowledge(pipe, "p:", knowledge_change([l1("b", "Nate came over."), again]))
    [revision] = [args[1] for command, args in pipe.calls if command == "set"]
    [entry] = [args[1] for command, args in pipe.calls if command == "rpush"]
    assert json.loads(entry) == {"revision": revision, "leaves": ["a", "b"]}


def test_the_heads_a_commit_derived_are_written_and_an_emptied_slot_loses_its_own() -> None:
    said = knowledge_change([l1("a", "I live in Porto.")])
    # The subject's ending slot comes too, empty: it says no ending was told.
    [slot] = [s for s in fact_changes({}, said).heads if s[2] == "lives_in"]
    pipe = RecordingPipe()
    queue_knowledge(pipe, "p:", replace(said, heads=fact_changes({}, said).heads))
    assert ("hset", keys.FACT_HEADS) in pipe.commands
    assert ("delete", keys.FACT_HEADS) not in pipe.commands
    emptied = replace(KnowledgeChange(dropped=("a",)), heads={slot: None})
    assert ("hdel", keys.FACT_HEADS) in queued(emptied)
    assert ("delete", keys.FACT_HEADS) not in queued(emptied)
