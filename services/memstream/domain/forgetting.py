"""Forgetting a user for good: the tombstone a forget leaves, and what it keeps out.

A forget deletes the user's keys and points, but work already under way (a consolidation
that read the children before the delete, a closure still in the windows topic, a turn
replayed from the turns topic) could write the user back. The tombstone, written in the
same transaction as the delete, stops that:

- Every commit of a user's state or nodes names the tombstone it read before it started
  (none, usually) and is applied only if the user's tombstone is still that one; the check
  is part of the store's transaction, so a forget that lands in between always wins.
- A turns record that was in the log before the forget (a replay, a redelivery after a
  crash) is dropped, so the replay cannot bring the user back. A record appended after the
  forget is new input: the user starts afresh, with nothing of the old memory.

"Before the forget" is decided on the log when the forget came through it: same partition
(turns are keyed by user, so a user's records share one) and a smaller offset, unless the
record's broker time is later than the forget's (the topic was recreated and offsets
started again). A forget made directly on the stores (the API, which then also publishes
`forget.v1`) has no position: records the broker stamped before it are dropped.

The tombstone expires once nothing that predates it can still be replayed: the retention of
the turns topic (the original records) plus that of the windows topic (closures derived
from them). `lifetime_s` computes it from the two.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Tombstone:
    """What is left of a forgotten user: when it was forgotten and where the forget was."""

    forgotten_at: float  # epoch seconds, wall clock of the worker or API that forgot
    partition: int | None = None  # the forget.v1 record's place in the turns topic
    offset: int | None = None
    record_ts: float | None = None  # its broker time, epoch seconds

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Tombstone:
        return cls(
            forgotten_at=float(doc["forgotten_at"]),
            partition=doc.get("partition"),
            offset=doc.get("offset"),
            record_ts=doc.get("record_ts"),
        )

    def predates(self, partition: int, offset: int, record_ts: float | None) -> bool:
        """Whether a turns record at this place and broker time came before the forget."""
        if self.partition is not None and self.offset is not None and partition == self.partition:
            appended_later = (
                record_ts is not None and self.record_ts is not None and record_ts > self.record_ts
            )
            return offset < self.offset and not appended_later
        return record_ts is not None and record_ts <= self.forgotten_at


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What a forget removed, for the caller's report."""

    nodes: int  # memory nodes, all levels
    redis_keys: int  # every key of the user, nodes included
    tombstone_ttl_s: int | None  # how long the tombstone stays (None: until removed)


def lifetime_s(*retentions_ms: int) -> int | None:
    """The tombstone's lifetime: the sum of the retentions of the topics a replay reads
    (None when one keeps records forever, so the tombstone must too)."""
    if any(r < 0 for r in retentions_ms):
        return None
    return max(1, sum(retentions_ms) // 1000)


@dataclass(frozen=True, slots=True)
class Guard:
    """A commit's condition: the user's tombstone is still the one read before the work
    began (`None`: the user had none). A forget in between changes it, and the commit is
    dropped instead of writing the user back."""

    tombstone: Tombstone | None

    def allows(self, current: Tombstone | None) -> bool:
        """Whether a commit may go ahead with the user's tombstone now `current`. Every
        forget writes a new tombstone, so one that differs means a forget came in between;
        one that is gone only expired (its lifetime passed), which forgets nothing."""
        return current is None or current == self.tombstone
