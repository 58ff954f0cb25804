"""The change feed's events beyond memories written and removed (`docs/change-feed.md`).

Each is published on the memories topic under its user's id, so it sits in order with that
user's `memory.v1` and `memory_removed.v1` values.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memstream.contracts.knowledge_codec import encode_fact
from memstream.domain.fact_changes import FactChanges
from memstream.domain.facts import AtomicFact
from memstream.domain.models import MemoryNode
from memstream.domain.rebuild import RebuildJob

USER_FORGOTTEN = "user_forgotten.v1"
WINDOW_CONSOLIDATED = "window_consolidated.v1"
REBUILD_FINISHED = "rebuild_finished.v1"
FACT = "fact.v1"
FACT_REMOVED = "fact_removed.v1"
FACT_SUPERSEDED = "fact_superseded.v1"
FACT_REOPENED = "fact_reopened.v1"


def user_forgotten_event(
    user_id: str, partition: int, offset: int, forgotten_at: float
) -> dict[str, Any]:
    """Every memory of the user is gone. `forget_id` is the forget record's place in the
    turns topic: a replayed forget announces itself again under the same id."""
    return {
        "type": USER_FORGOTTEN,
        "user_id": user_id,
        "forget_id": f"{partition}:{offset}",
        "forgotten_at": datetime.fromtimestamp(forgotten_at, UTC).isoformat(),
    }


def window_consolidated_event(node: MemoryNode) -> dict[str, Any]:
    """The window of `node` (L2-L5) was consolidated into this version of it."""
    return {
        "type": WINDOW_CONSOLIDATED,
        "user_id": node.user_id,
        "node_id": node.id,
        "level": int(node.level),
        "t_start": node.t_start.isoformat(),
        "t_end": node.t_end.isoformat(),
        "version": node.version,
    }


def rebuild_finished_event(user_id: str, job: RebuildJob) -> dict[str, Any]:
    """The rebuild's last leaves are written; the windows above follow as consolidations."""
    return {
        "type": REBUILD_FINISHED,
        "user_id": user_id,
        "rebuild_id": job.rebuild_id,
        "leaves": job.leaf_count,
        "leaves_rewritten": job.rewritten,
    }


def fact_events(user_id: str, changes: FactChanges) -> list[dict[str, Any]]:
    """A commit's fact versions on the feed: the versions gone, then those written (new or
    changed), then which of them a newer one closed and which hold again. Replaying the
    first two gives the user's versions; the last two say why they changed."""
    events: list[dict[str, Any]] = []
    if changes.removed:
        events.append({"type": FACT_REMOVED, "user_id": user_id, "fact_ids": list(changes.removed)})
    events += [
        {"type": FACT, **encode_fact(version), "statements": version.statements}
        for version in changes.written
    ]
    events += [_superseded(version) for version in changes.superseded]
    events += [
        {**_about(r.version), "type": FACT_REOPENED, "was_superseded_by": r.was_superseded_by}
        for r in changes.reopened
    ]
    return events


def _superseded(version: AtomicFact) -> dict[str, Any]:
    return {
        **_about(version),
        "type": FACT_SUPERSEDED,
        "superseded_by": version.superseded_by,
        "valid_to": version.valid_to.isoformat() if version.valid_to else None,
    }


def _about(version: AtomicFact) -> dict[str, Any]:
    return {
        "user_id": version.user_id,
        "fact_id": version.fact_id,
        "subject": version.subject,
        "subject_name": version.subject_name,
        "attribute": version.attribute,
        "value": version.value,
    }
