"""Decoded memory nodes by where Redis returned them from, held while their bytes stay the same.

Recall reads about 270 nodes per request (the leaf candidates, their sessions and the
ancestors of the leaves kept), and decoding each (JSON, then the dataclasses, timestamps
parsed) was the largest share of a request's CPU. The same hot nodes come back request after
request, so a node read again is not decoded again: the bytes are still fetched from Redis
every time, and the cache keeps, under the node's Redis key, the bytes it decoded and the
node they gave. A read is a hit only when its bytes equal the kept ones (a length check,
then memcmp: no hashing of several KB a node, which keying by the bytes themselves cost), so
a node rewritten in Redis is decoded anew and an entry is never stale; what a hit saves is
the decode, never the read.

Nodes are frozen dataclasses of immutable values, so the one decoded instance is shared by
every request that reads those bytes.

The cache is bounded by memory (`max_bytes`), and optionally by a count (`size`): least
recently used entries go first while either is over. A node's size varies tenfold (a
synthetic one-line L1, an L1 with its verbatim messages, a summary with its facts), so a
count alone either wastes memory or holds too few: a count bound sized for real nodes held
a large tree of small nodes only in part, and the few decodes each recall then missed cost
about as much CPU as all its hits together.

An entry is charged `entry_bytes`: the bytes kept, the decoded node (about as large again,
its strings being the same text) and its objects' overhead.
`tests/unit/adapters/redis/test_node_cache.py` holds the charge above what tracemalloc
measures an entry to hold, for small, message-bearing and long nodes.
A bound of 0 keeps nothing.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from memstream.contracts.codec import decode_node
from memstream.domain.models import MemoryNode

# About what the count bound of 10,000 it replaces held of real nodes (an L1 with two
# verbatim messages is charged 4-5 KB), and room for 30,000 one-line ones.
DEFAULT_MAX_BYTES = 48 * 1024 * 1024
# Beyond the text, held twice: the node's own objects (its dataclass, tuples, datetimes and
# the ordered dict's slot), and as much again for each verbatim message or fact it carries
# (both above what tracemalloc finds them to hold; the unit test keeps them so).
ENTRY_OVERHEAD = 512
PART_OVERHEAD = 512


def entry_bytes(raw: bytes | str, node: MemoryNode) -> int:
    """What keeping `raw` and `node`, decoded from it, is charged against `max_bytes`."""
    return 2 * len(raw) + ENTRY_OVERHEAD + PART_OVERHEAD * (len(node.messages) + len(node.facts))


class NodeDecodeCache:
    """`cache.decode(raw, key)` is `decode_node(json.loads(raw))`, remembered under `key`
    with `raw`."""

    def __init__(
        self,
        size: int | None = None,
        decode: Callable[[dict[str, Any]], MemoryNode] = decode_node,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        if (size is not None and size < 0) or max_bytes < 0:
            raise ValueError("size and max_bytes must not be negative")
        self._size = size
        self._max_bytes = max_bytes
        self._decode = decode
        # key -> (the bytes the node was decoded from, the node, its charge)
        self._nodes: OrderedDict[Hashable, tuple[bytes | str, MemoryNode, int]] = OrderedDict()
        self.held_bytes = 0  # the entries' charges (entry_bytes)
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._nodes)

    @property
    def bounds(self) -> tuple[int, int | None]:
        """(max_bytes, size): the memory bound and the count bound (None: none)."""
        return self._max_bytes, self._size

    def peek(self, key: Hashable) -> MemoryNode | None:
        """The node last decoded under `key`, if still held: what it was, maybe not what it
        is (a guess of what to read, never an answer: see `RedisTree.get_with_ancestors`)."""
        entry = self._nodes.get(key)
        return None if entry is None else entry[1]

    def decode(self, raw: bytes | str, key: Hashable) -> MemoryNode:
        """The node `raw` holds; `key` names where it was read from (its Redis key)."""
        entry = self._nodes.get(key)
        if entry is not None and entry[0] == raw:
            self._nodes.move_to_end(key)
            self.hits += 1
            return entry[1]
        self.misses += 1
        node = self._decode(json.loads(raw))
        self._keep(key, raw, node)
        return node

    def _keep(self, key: Hashable, raw: bytes | str, node: MemoryNode) -> None:
        self._forget(key)  # a rewritten node's entry of its old bytes
        charge = entry_bytes(raw, node)
        if self._size == 0 or charge > self._max_bytes:
            return
        self._nodes[key] = (raw, node, charge)
        self.held_bytes += charge
        while self.held_bytes > self._max_bytes or (
            self._size is not None and len(self._nodes) > self._size
        ):
            self.held_bytes -= self._nodes.popitem(last=False)[1][2]

    def _forget(self, key: Hashable) -> None:
        entry = self._nodes.pop(key, None)
        if entry is not None:
            self.held_bytes -= entry[2]
