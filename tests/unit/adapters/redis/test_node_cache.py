"""NodeDecodeCache: a node read again with the same bytes is decoded once; other bytes anew;
what it holds stays within its bounds."""

from __future__ import annotations

import dataclasses
import json
import sys
import tracemalloc
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.adapters.redis.node_cache import NodeDecodeCache, entry_bytes
from memstream.contracts.codec import decode_node, encode_node
from memstream.domain.models import Fact, Level, MemoryNode, SourceMessage

AT = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)


def stored(node_id: str, text: str = "Ana went hiking.") -> bytes:
    node = MemoryNode(node_id, "ana", Level.SEGMENT, AT, AT, text, source_ids=("m1",))
    return json.dumps(encode_node(node)).encode()


def key_of(node_id: str) -> str:
    return f"ms:{{ana}}:node:{node_id}"


def charge(raw: bytes) -> int:
    return entry_bytes(raw, decode_node(json.loads(raw)))


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


# --- the memory bound -------------------------------------------------------------------------


def test_entries_go_least_recently_used_first_once_over_the_memory_bound() -> None:
    raws = {i: stored(i) for i in "abc"}
    cache = NodeDecodeCache(max_bytes=charge(raws["a"]) + charge(raws["b"]))
    cache.decode(raws["a"], key_of("a"))
    cache.decode(raws["b"], key_of("b"))
    cache.decode(raws["a"], key_of("a"))  # a is now the more recent
    cache.decode(raws["c"], key_of("c"))  # over the bound: b goes
    assert cache.held_bytes == charge(raws["a"]) + charge(raws["c"])
    assert cache.peek(key_of("b")) is None
    assert cache.peek(key_of("a")) is not None


def test_a_node_larger_than_the_bound_is_decoded_but_not_kept() -> None:
    small, large = stored("a"), stored("b", "Ana went hiking. " * 200)
    cache = NodeDecodeCache(max_bytes=charge(small) * 2)
    cache.decode(small, key_of("a"))
    node = cache.decode(large, key_of("b"))
    assert node.text.startswith("Ana went hiking.")
    assert (len(cache), cache.held_bytes) == (1, charge(small))


def test_a_rewritten_node_is_charged_for_its_new_bytes_only() -> None:
    old, new = stored("a"), stored("a", "Ana went hiking, twice, in the rain.")
    cache = NodeDecodeCache()
    cache.decode(old, key_of("a"))
    cache.decode(new, key_of("a"))
    assert (len(cache), cache.held_bytes) == (1, charge(new))


def test_a_rewritten_node_too_large_to_keep_leaves_no_entry_of_its_old_bytes() -> None:
    old, new = stored("a"), stored("a", "Ana went hiking. " * 200)
    cache = NodeDecodeCache(max_bytes=charge(old))
    cache.decode(old, key_of("a"))
    cache.decode(new, key_of("a"))
    assert (len(cache), cache.held_bytes, cache.peek(key_of("a"))) == (0, 0, None)


@settings(max_examples=200, deadline=None)
@given(
    reads=st.lists(st.tuples(st.sampled_from("abcdef"), st.integers(0, 300)), max_size=60),
    max_bytes=st.integers(0, 8_000),
    size=st.one_of(st.none(), st.integers(0, 4)),
)
def test_the_bounds_hold_and_every_read_gives_its_own_bytes_node(
    reads: list[tuple[str, int]], max_bytes: int, size: int | None
) -> None:
    cache = NodeDecodeCache(size, max_bytes=max_bytes)
    for node_id, length in reads:
        raw = stored(node_id, "x" * length)
        assert cache.decode(raw, key_of(node_id)) == decode_node(json.loads(raw))
        held = [kept for kept, _, _ in cache._nodes.values()]  # the invariant's terms
        assert cache.held_bytes == sum(charge(r) for r in held) <= max_bytes
        assert size is None or len(cache) <= size


def _node_shapes() -> dict[str, MemoryNode]:
    words = " ".join(f"word{i}" for i in range(60))
    message = SourceMessage("m1", "Caroline", "user", words, AT, None)
    return {
        "one-line L1": MemoryNode("a", "ana", Level.SEGMENT, AT, AT, "Ana went hiking."),
        "L1 with its messages": MemoryNode(
            "b",
            "ana",
            Level.SEGMENT,
            AT,
            AT,
            words,
            parent_id="s",
            source_ids=("m1", "m2"),
            speakers=("Caroline", "Melanie"),
            messages=(message, replace(message, event_id="m2", speaker="Melanie")),
        ),
        "summary with facts": MemoryNode(
            "c",
            "ana",
            Level.SESSION,
            AT,
            AT,
            words * 8,
            facts=tuple(Fact(words, ("m1",), AT) for _ in range(8)),
        ),
    }


@pytest.mark.parametrize("shape", list(_node_shapes()))
def test_the_charge_of_an_entry_covers_what_it_holds(shape: str) -> None:
    """The bound is on memory only if an entry's charge is at least what it really holds:
    its bytes and the decoded node (tracemalloc counts every allocation the decode made)."""
    node = _node_shapes()[shape]
    raws = [json.dumps(encode_node(replace(node, id=f"{node.id}{i}"))).encode() for i in range(200)]
    cache = NodeDecodeCache()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i, raw in enumerate(raws):
            cache.decode(raw, key_of(f"{node.id}{i}"))
        decoded = (tracemalloc.get_traced_memory()[0] - before) / len(raws)
    finally:
        tracemalloc.stop()
    held = decoded + sum(sys.getsizeof(r) for r in raws) / len(raws)
    assert held <= charge(raws[0]) <= 2 * held
