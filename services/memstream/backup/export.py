"""A user's memory as the records of an export file, read page by page (`memstream export`).

The records come in the file's order (`contracts.backup_format`): the header (counted from
the level indexes first), the window state and due time, the message deadlines, the nodes
level by level (each page of L1s with what its leaves state), and the end with what was
written. It is not a snapshot: a user the workers write meanwhile may be read half before
and half after a write; export a user at rest, or export again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime

from memstream.contracts.backup_format import (
    End,
    Expiry,
    Header,
    NodeRecord,
    Record,
    Tally,
    UserState,
)
from memstream.domain.models import Level
from memstream.ports.backup import BackupReads

PAGE = 200


async def planned_counts(store: BackupReads, user_id: str) -> dict[str, int]:
    """Nodes per level and deadlines, as the store counts them now (the header's counts)."""
    counts = {level.label: await store.count(user_id, level) for level in Level}
    deadlines = 0
    while page := await store.expiry_page(user_id, deadlines, 10_000):
        deadlines += len(page)
    counts["expiries"] = deadlines
    return counts


async def has_memory(store: BackupReads, user_id: str) -> bool:
    """Whether anything of the user is stored: a window state or a node."""
    if await store.load_state(user_id) is not None:
        return True
    return any([await store.count(user_id, level) for level in Level])


async def export_records(
    store: BackupReads,
    user_id: str,
    memstream_version: str,
    *,
    exported_at: datetime | None = None,
    counts: Mapping[str, int] | None = None,
    page: int = PAGE,
) -> AsyncIterator[Record]:
    """Every record of the user's export file, in order."""
    tally = Tally()
    yield Header(
        user_id=user_id,
        exported_at=exported_at or datetime.now(UTC),
        memstream_version=memstream_version,
        counts=counts if counts is not None else await planned_counts(store, user_id),
    )
    yield UserState(await store.load_state(user_id), await store.due_at(user_id))
    offset = 0
    while deadlines := await store.expiry_page(user_id, offset, page):
        offset += len(deadlines)
        for event_id, at in deadlines:
            record: Record = Expiry(event_id, datetime.fromtimestamp(at, UTC))
            tally.add(record)
            yield record
    for level in Level:
        offset = 0
        while ids := await store.level_ids(user_id, level, offset=offset, limit=page):
            offset += len(ids)
            nodes = await store.stored_nodes(user_id, ids)
            said = await store.leaf_knowledge(user_id, ids) if level == Level.SEGMENT else {}
            for stored in nodes:
                record = NodeRecord(stored, said.get(stored.node.id))
                tally.add(record)
                yield record
    yield End(tally.as_dict())
