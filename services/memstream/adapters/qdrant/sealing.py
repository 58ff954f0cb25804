"""The index's payloads with the user's words sealed (MEMSTREAM_SEAL_INDEX).

A point's payload keeps a node whole (`query.node_payload`), and Qdrant keeps it in its
segment files and its write-ahead log: a deleted point's words stay in those files until the
engine rewrites them, which the WAL only does when it rolls over. Sealed, the words (the
text and the packed fields: messages, facts, speakers) are one envelope under the user's
data key (`contracts.sealed`), and a forget that deletes the key leaves every copy on disk
unreadable at once. What filters and counts read (user, level, times) and the version stay
plain; recall reads no payload (the tree store serves the nodes).

The cost (docs/forget-everywhere.md): the index alone can no longer give the tree back after
Redis is lost with its keys (`SealedPayloadError`); Redis's own files or a backup can.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from memstream.adapters.qdrant.query import NODE_FIELDS, node_from_payload, node_payload
from memstream.contracts.sealed import open_sealed, seal
from memstream.domain.models import IndexedMemory, MemoryNode
from memstream.ports import DataKeys

SEALED_FIELD = "sealed"
NODE_TYPE = "node.v1"  # the sealed_type of a payload's words


class SealedPayloadError(RuntimeError):
    """The index holds a user's words sealed, and the user's key is not there to open them."""

    def __init__(self, user_id: str) -> None:
        super().__init__(
            f"the index's payloads of user {user_id!r} are sealed under a data key Redis no "
            "longer holds: restore Redis from its own files or a backup (memstream backup) "
            "instead of from the index"
        )


def sealed_payload(node: MemoryNode, key: bytes | None) -> dict[str, Any]:
    """The node's payload, its words sealed under `key` (as it is without one)."""
    payload = node_payload(node)
    if key is None:
        return payload
    words = {"type": NODE_TYPE, "user_id": node.user_id, "text": payload.pop("text")}
    words[NODE_FIELDS] = payload.pop(NODE_FIELDS)
    return {**payload, "version": node.version, SEALED_FIELD: json.dumps(seal(words, key))}


def opened_node(node_id: str, payload: Mapping[str, Any], key: bytes | None) -> MemoryNode:
    """The node a payload holds, opened with `key` when it is sealed."""
    envelope = payload.get(SEALED_FIELD)
    if not isinstance(envelope, str):
        return node_from_payload(node_id, dict(payload))
    if key is None:
        raise SealedPayloadError(str(payload.get("user_id")))
    words = open_sealed(json.loads(envelope), key)
    plain = {k: v for k, v in payload.items() if k != SEALED_FIELD}
    return node_from_payload(
        node_id, {**plain, "text": words["text"], NODE_FIELDS: words[NODE_FIELDS]}
    )


def payload_version(node_id: str, payload: Mapping[str, Any]) -> int:
    """The node version a payload holds, sealed or not (no key needed)."""
    if isinstance(payload.get(SEALED_FIELD), str):
        return int(payload["version"])
    return node_from_payload(node_id, dict(payload)).version


class PayloadKeys:
    """The keys an index seals its payloads under; sealing is off without `keys`."""

    def __init__(self, keys: DataKeys | None) -> None:
        self._keys = keys

    async def for_writing(
        self, memories: Sequence[IndexedMemory]
    ) -> tuple[list[IndexedMemory], dict[str, bytes | None]]:
        """The memories that may be written, and the key of each one's user (None: sealing
        off). A user with no key to seal under was forgotten: its points are not written
        (the commit after them is refused by its tombstone anyway)."""
        if self._keys is None:
            return list(memories), {}
        found = await self._keys.data_keys_for_writing({m.node.user_id for m in memories})
        return [m for m in memories if found.get(m.node.user_id) is not None], found

    async def for_reading(self, user_ids: Collection[str]) -> dict[str, bytes | None]:
        if self._keys is None or not user_ids:
            return {}
        return await self._keys.data_keys(user_ids)
