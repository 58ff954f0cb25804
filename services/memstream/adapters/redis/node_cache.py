"""Decoded memory nodes by where Redis returned them from, held while their bytes stay the same.

Recall reads about 170 nodes per request (the leaf candidates and their ancestors), and
decoding each (JSON, then the dataclasses, timestamps parsed) was the largest share of a
request's CPU. The same hot nodes come back request after request, so a node read again is
not decoded again: the bytes are still fetched from Redis every time, and the cache keeps,
under the node's Redis key, the bytes it decoded and the node they gave. A read is a hit
only when its bytes equal the kept ones (a length check, then memcmp: no hashing of several
KB a node, which keying by the bytes themselves cost), so a node rewritten in Redis is
decoded anew and an entry is never stale; what a hit saves is the decode, never the read.

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
    """`cache.decode(raw, key)` is `decode_node(json.loads(raw))`, remembered under `key`
    with `raw`."""

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

    def decode(self, raw: bytes | str, key: Hashable) -> MemoryNode:
        """The node `raw` holds; `key` names where it was read from (its Redis key)."""
        entry = self._nodes.get(key)
        if entry is not None and entry[0] == raw:
            self._nodes.move_to_end(key)
            self.hits += 1
            return entry[1]
        self.misses += 1
        node = self._decode(json.loads(raw))
        if self._size:
            self._nodes[key] = (raw, node)
            self._nodes.move_to_end(key)  # a rewritten node's key may be an old entry
            if len(self._nodes) > self._size:
                self._nodes.popitem(last=False)
        return node
