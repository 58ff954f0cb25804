"""A memory's facts, each with its source message ids, reach the HTTP response."""

from datetime import UTC, datetime

from memstream.domain.models import Fact, Level, MemoryNode
from memstream.edges.http.schemas import Memory

MAY_8 = datetime(2023, 5, 8, tzinfo=UTC)


def test_a_memory_carries_its_facts_with_their_sources() -> None:
    node = MemoryNode(
        id="s1",
        user_id="u1",
        level=Level.SESSION,
        t_start=MAY_8,
        t_end=MAY_8,
        text='Session on 8 May 2023 (Mon): Ana: "I adopted a dog." Ana: "I moved to Lyon."',
        source_ids=("m1", "m2", "m3"),
        facts=(Fact('Ana: "I adopted a dog."', ("m1",)), Fact('Ana: "I moved to Lyon."', ("m3",))),
    )
    body = Memory.of(node).model_dump()
    assert body["facts"] == [
        {"text": 'Ana: "I adopted a dog."', "source_ids": ["m1"]},
        {"text": 'Ana: "I moved to Lyon."', "source_ids": ["m3"]},
    ]
    assert Memory.model_validate(body).to_node().facts == node.facts
