"""NodeDecodeCache: a node read again with the same bytes is decoded once; other bytes anew."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

import pytest

from memstream.adapters.redis.node_cache import NodeDecodeCache
from memstream.contracts.codec import decode_node, encode_node
from memstream.domain.models import Level, MemoryNode

AT = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)


def stored(node_id: str, text: str = "Ana went hiking.") -> bytes:
    node = MemoryNode(node_id, "ana", Level.SEGMENT, AT, AT, text, source_ids=("m1",))
    return json.dumps(encode_node(node)).encode()


def key_of(node_id: str) -> str:
    return f"ms:{{ana}}:node:{node_id}"


def test_the_same_bytes_are_decoded_once_and_give_the_same_node() -> None:
    cache = NodeDecodeCache(4)
    first = cache.decode(stored("a"), key_of("a"))
    again = cache.decode(
        stored("a"), key_of("a")
    )  # equal bytes, another object: as Redis returns them
    assert again is first
    assert first == decode_node(json.loads(stored("a")))
    assert (cache.hits, cache.misses) == (1, 1)


def test_a_rewritten_node_is_decoded_from_its_new_bytes() -> None:
    cache = NodeDecodeCache(4)
    cache.decode(stored("a", "Ana went hiking."), key_of("a"))
    rewritten = cache.decode(stored("a", "Ana went hiking twice."), key_of("a"))
    assert rewritten.text == "Ana went hiking twice."
    assert cache.misses == 2


def test_by_key_a_hit_needs_the_same_bytes() -> None:
    cache = NodeDecodeCache(4)
    key = "ms:{ana}:node:a"
    first = cache.decode(stored("a"), key)
    assert cache.decode(stored("a"), key) is first
    rewritten = cache.decode(stored("a", "Ana went hiking twice."), key)
    assert rewritten.text == "Ana went hiking twice."
    assert cache.decode(stored("a", "Ana went hiking twice."), key) is rewritten
    assert (cache.hits, cache.misses, len(cache)) == (2, 2, 1)


def test_the_least_recently_used_entry_goes_first() -> None:
    cache = NodeDecodeCache(2)
    cache.decode(stored("a"), key_of("a"))
    cache.decode(stored("b"), key_of("b"))
    cache.decode(stored("a"), key_of("a"))  # a is now the more recent
    cache.decode(stored("c"), key_of("c"))  # over the size: b goes
    assert len(cache) == 2
    cache.decode(stored("a"), key_of("a"))
    assert cache.hits == 2
    cache.decode(stored("b"), key_of("b"))
    assert cache.misses == 4  # a, b, c, and b again


def test_size_zero_keeps_nothing() -> None:
    decoded: list[str] = []

    def counting(value: dict[str, object]) -> MemoryNode:
        node = decode_node(value)
        decoded.append(node.id)
        return node

    cache = NodeDecodeCache(0, decode=counting)
    cache.decode(stored("a"), key_of("a"))
    cache.decode(stored("a"), key_of("a"))
    assert decoded == ["a", "a"]
    assert len(cache) == 0


def test_shared_nodes_cannot_be_changed_by_a_reader() -> None:
    node = NodeDecodeCache(2).decode(stored("a"), key_of("a"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.text = "changed"  # type: ignore[misc]


def test_a_negative_size_is_refused() -> None:
    with pytest.raises(ValueError):
        NodeDecodeCache(-1)
