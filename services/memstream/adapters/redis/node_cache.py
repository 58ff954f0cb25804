"""Decoded memory nodes by the exact bytes Redis returned for them.

Recall reads about 170 nodes per request (the leaf candidates and their ancestors), and
decoding each (JSON, then the dataclasses, timestamps parsed) was the largest share of a
request's CPU. The same hot nodes come back request after request, so a node read again is
not decoded again: the bytes are still fetched from Redis every time, and the cache maps
those bytes to what decoding them gives. A node rewritten in Redis has other bytes, so an
entry is never stale; what a hit saves is the decode, never the read.

A reader that knows where the bytes came from (the node's Redis key) passes it as `key`:
the entry is found by that short key and is a hit only when its bytes equal the bytes read
now (a length check, then memcmp), instead of hashing the several KB of every node on every
read, which the lookup by bytes did.

Nodes are frozen dataclasses of immutable values, so the one decoded instance is shared by
every request that reads those bytes. Least recently used entries go first once `size`
entries are held; size 0 keeps nothing.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from memstream.contracts.codec import decode_node
from memstream.domain.models import MemoryNode

# Enough for the hot part of several large trees; a node of a real conversation (an L1 with
# its verbatim messages) holds a few KB decoded, so this stays in the tens of MB.
DEFAULT_SIZE = 10_000


class NodeDecodeCache:
    """`cache.decode(raw, key)` is `decode_node(json.loads(raw))`, remembered by `key` and
    `raw`."""

    def __init__(
        self,
        size: int = DEFAULT_SIZE,
        decode: Callable[[dict[str, Any]], MemoryNode] = decode_node,
    ) -> None:
        if size < 0:
            raise ValueError("size must not be negative")
        self._size = size
        self._decode = decode
        # key -> (the bytes the node was decoded from, the node)
        self._nodes: OrderedDict[Hashable, tuple[bytes | str, MemoryNode]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._nodes)

    def peek(self, key: Hashable) -> MemoryNode | None:
        """The node last decoded under `key`, if still held: what it was, maybe not what it
        is (a guess of what to read, never an answer: see `RedisTree.get_with_ancestors`)."""
        entry = self._nodes.get(key)
        return None if entry is None else entry[1]

    def decode(self, raw: bytes | str, key: Hashable | None = None) -> MemoryNode:
        """The node `raw` holds; `key` names where it was read from (None: `raw` itself)."""
        slot = raw if key is None else key
        entry = self._nodes.get(slot)
        if entry is not None and entry[0] == raw:
            self._nodes.move_to_end(slot)
            self.hits += 1
            return entry[1]
        self.misses += 1
        node = self._decode(json.loads(raw))
        if self._size:
            self._nodes[slot] = (raw, node)
            self._nodes.move_to_end(slot)  # a rewritten node's slot may be an old one
            if len(self._nodes) > self._size:
                self._nodes.popitem(last=False)
        return node
