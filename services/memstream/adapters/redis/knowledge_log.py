"""The user's knowledge change log: which L1s each revision changed, so a reader holding an
older revision reads only those (`knowledge_cache`, `domain.knowledge_view`).

Every transaction that sets a new revision appends one entry to `keys.KNOWLEDGE_CHANGES`
in the same MULTI: the revision and the ids of the L1s whose facts or surfaces it wrote or
removed. Transactions are serial, so the list is the revisions in the order they were set,
and the L1s changed between a revision held and the current one are those of the entries
after it. The list keeps the last `KEPT` entries; a change of more than `MOST_LEAVES` L1s (a
rebuild, a restore) writes an entry without ids, which no reader steps over. Either way,
and whenever the chain looks broken (the revision held is not in the list, the current
revision is not its last entry: data written before the log existed), the reader derives the
user whole, as it did before the log: the log can make a read cheaper, never different.
A forget deletes the list with the revision.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from memstream.adapters.redis.base import text

KEPT = 32
MOST_LEAVES = 256


def queue_entry(pipe: Any, key: str, revision: str, leaf_ids: Collection[str]) -> None:
    """Append the entry of `revision` on a transaction's pipeline and keep the last `KEPT`."""
    named = sorted(leaf_ids) if len(leaf_ids) <= MOST_LEAVES else None
    pipe.rpush(key, json.dumps({"revision": revision, "leaves": named}))
    pipe.ltrim(key, -KEPT, -1)


def changed_since(entries: Sequence[Any], held: bytes, current: bytes) -> set[str] | None:
    """The L1s changed after revision `held` up to `current`, from the log's entries (oldest
    first); None when the log cannot say (the chain is broken, or an entry names no L1s)."""
    decoded = [json.loads(text(entry)) for entry in entries]
    revisions = [entry.get("revision") for entry in decoded]
    if not revisions or revisions[-1] != text(current) or text(held) not in revisions:
        return None
    changed: set[str] = set()
    for entry in decoded[revisions.index(text(held)) + 1 :]:
        if entry.get("leaves") is None:
            return None
        changed.update(entry["leaves"])
    return changed
