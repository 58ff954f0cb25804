"""An L1's verbatim messages and a summary's facts survive the stores' encoding."""

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from memstream.adapters.qdrant.query import NODE_FIELDS, node_from_payload, node_payload
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
# A message as L1s keep it since they keep its place in the session and its zone.
PLACED = SourceMessage("m2", "Ana", "user", "Hi", MAY_8, seq=3, tz="Asia/Tokyo")
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
    tz="Europe/Lisbon",  # the zone its window was opened in, kept by both stores
    user_id="u1",
    level=Level.SESSION,
    t_start=MAY_8,
    t_end=MAY_8,
    text='Session on 8 May 2023 (Mon): Ana: "I adopted a dog."',
    source_ids=("m1", "m2"),
    facts=(Fact('Ana: "I adopted a dog."', ("m1", "m2"), MAY_8),),
)


def test_the_tree_store_encoding_keeps_messages_and_facts() -> None:
    for node in (LEAF, SESSION, replace(LEAF, messages=(PLACED,))):
        assert decode_node(encode_node(node)) == node


def test_the_vector_payload_keeps_messages_and_facts() -> None:
    for node in (LEAF, SESSION, replace(LEAF, messages=(PLACED,))):
        assert node_from_payload(node.id, node_payload(node)) == node
    assert json.loads(node_payload(LEAF)[NODE_FIELDS])["messages"] == [LEAF_MESSAGE]


def test_the_vector_payload_holds_what_filters_use_and_the_rest_as_one_json_text() -> None:
    # The engine converts a payload value by value, about 2 us a string.
    payload = node_payload(SESSION)
    assert set(payload) == {"user_id", "level", "t_start", "t_end", "text", NODE_FIELDS}
    assert payload["user_id"] == "u1" and payload["level"] == 2
    assert payload["t_end"] == MAY_8.timestamp()
    assert json.loads(payload[NODE_FIELDS])["facts"] == [
        {"text": 'Ana: "I adopted a dog."', "source_ids": ["m1", "m2"], "at": MAY_8.isoformat()}
    ]


def unpacked(node: MemoryNode) -> dict[str, Any]:
    """The payload as points were written before the packing: every field on its own."""
    payload = node_payload(node)
    packed = json.loads(payload.pop(NODE_FIELDS))
    return {**payload, **packed}


def test_points_written_before_the_packing_are_still_read() -> None:
    for node in (LEAF, SESSION):
        assert node_from_payload(node.id, unpacked(node)) == node
        # Earlier still, the messages and facts were JSON texts of their own.
        earlier = unpacked(node)
        earlier["messages"] = json.dumps(earlier["messages"])
        earlier["facts"] = json.dumps(earlier["facts"])
        assert node_from_payload(node.id, earlier) == node
    assert node_from_payload(LEAF.id, {**unpacked(LEAF), "messages": None}).messages == ()


def test_the_change_feed_announces_a_node_with_its_facts_and_without_its_messages() -> None:
    event = memory_event(LEAF)
    assert "messages" not in event and "children" not in event
    assert memory_event(SESSION)["facts"] == [
        {"text": 'Ana: "I adopted a dog."', "source_ids": ["m1", "m2"], "at": MAY_8.isoformat()}
    ]
