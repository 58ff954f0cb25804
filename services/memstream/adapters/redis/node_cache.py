"""Decoded memory nodes by the exact bytes Redis returned for them.

Recall reads about 170 nodes per request (the leaf candidates and their ancestors), and
decoding each (JSON, then the dataclasses, timestamps parsed) was the largest share of a
request's CPU. The same hot nodes come back request after request, so a node read again is
not decoded again: the bytes are still fetched from Redis every time, and the cache maps
those bytes to what decoding them gives. A node rewritten in Redis has other bytes, so an
entry is never stale; what a hit saves is the decode, never the read.

Nodes are frozen dataclasses of immutable values, so the one decoded instance is shared by
every request that reads those bytes. Least recently used entries go first once `size`
entries are held; size 0 keeps nothing.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from memstream.contracts.codec import decode_node
from memstream.domain.models import MemoryNode

# Enough for the hot part of several large trees; a node of a real conversation (an L1 with
# its verbatim messages) holds a few KB decoded, so this stays in the tens of MB.
DEFAULT_SIZE = 10_000


class NodeDecodeCache:
    """`cache.decode(raw)` is `decode_node(json.loads(raw))`, remembered by `raw`."""

    def __init__(
        self,
        size: int = DEFAULT_SIZE,
        decode: Callable[[dict[str, Any]], MemoryNode] = decode_node,
    ) -> None:
        if size < 0:
            raise ValueError("size must not be negative")
        self._size = size
        self._decode = decode
        self._nodes: OrderedDict[bytes | str, MemoryNode] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._nodes)

    def decode(self, raw: bytes | str) -> MemoryNode:
        node = self._nodes.get(raw)
        if node is not None:
            self._nodes.move_to_end(raw)
            self.hits += 1
            return node
        self.misses += 1
        node = self._decode(json.loads(raw))
        if self._size:
            self._nodes[raw] = node
            if len(self._nodes) > self._size:
                self._nodes.popitem(last=False)
        return node
