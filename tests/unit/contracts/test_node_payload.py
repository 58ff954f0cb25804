"""An L1's verbatim messages and a summary's facts survive the stores' encoding."""

import json
from datetime import UTC, datetime

from memstream.adapters.qdrant.query import node_from_payload, node_payload
from memstream.contracts.codec import decode_node, encode_node, memory_event
from memstream.domain.models import Fact, Level, MemoryNode, SourceMessage

MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
LEAF = MemoryNode(
    id="l1",
    user_id="u1",
    level=Level.SEGMENT,
    t_start=MAY_8,
    t_end=MAY_8,
    text='8 May 2023, Ana: "Look!" [photo: a dog]',
    source_ids=("m1",),
    messages=(SourceMessage("m1", "Ana", "user", "Look!", MAY_8, caption="a dog"),),
)
LEAF_MESSAGE = {
    "event_id": "m1",
    "speaker": "Ana",
    "role": "user",
    "text": "Look!",
    "ts": MAY_8.isoformat(),
    "caption": "a dog",
}
SESSION = MemoryNode(
    id="s1",
    user_id="u1",
    level=Level.SESSION,
    t_start=MAY_8,
    t_end=MAY_8,
    text='Session on 8 May 2023 (Mon): Ana: "I adopted a dog."',
    source_ids=("m1", "m2"),
    facts=(Fact('Ana: "I adopted a dog."', ("m1", "m2"), MAY_8),),
)


def test_the_tree_store_encoding_keeps_messages_and_facts() -> None:
    for node in (LEAF, SESSION):
        assert decode_node(encode_node(node)) == node


def test_the_vector_payload_keeps_messages_and_facts() -> None:
    for node in (LEAF, SESSION):
        assert node_from_payload(node.id, node_payload(node)) == node
    assert json.loads(node_payload(LEAF)["messages"]) == [LEAF_MESSAGE]


def test_the_vector_payload_holds_messages_and_facts_as_json_text() -> None:
    # One string field each: the engine converts a payload field by field.
    payload = node_payload(SESSION)
    assert isinstance(payload["messages"], str) and isinstance(payload["facts"], str)
    assert json.loads(payload["facts"]) == [
        {"text": 'Ana: "I adopted a dog."', "source_ids": ["m1", "m2"], "at": MAY_8.isoformat()}
    ]


def test_points_written_with_message_and_fact_lists_are_still_read() -> None:
    # The payload before it carried them as JSON text.
    for node in (LEAF, SESSION):
        earlier = node_payload(node)
        earlier["messages"] = json.loads(earlier["messages"])
        earlier["facts"] = json.loads(earlier["facts"])
        assert node_from_payload(node.id, earlier) == node
    assert node_from_payload(LEAF.id, {**node_payload(LEAF), "messages": None}).messages == ()


def test_the_memories_topic_announces_the_node_without_them() -> None:
    event = memory_event(LEAF)
    assert "messages" not in event and "facts" not in event
