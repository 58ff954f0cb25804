"""What a backup asks of the tree store: a user's whole tree read page by page, and written
back through the workers' own commits (`memstream.backup`).

The export reads what the workers' roles do not expose in pages (nodes with their
fingerprints, the knowledge of given L1s, the message deadlines, the user's due time); the
import writes with `commit_user` (the segmenter's L1 commit: state, leaves, their knowledge,
markers and deadlines) and `commit_nodes` (the consolidator's), as the workers would have.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from memstream.domain.knowledge import LeafKnowledge
from memstream.domain.models import StoredNode
from memstream.ports.tree import ConsolidatorStore, Forgetting, NodeReader, SegmenterStore


class BackupReads(NodeReader, Protocol):
    async def load_state(self, user_id: str) -> dict[str, Any] | None: ...

    async def due_at(self, user_id: str) -> datetime | None:
        """When the clock must next look at the user (None: nothing is due)."""
        ...

    async def stored_nodes(self, user_id: str, node_ids: Sequence[str]) -> list[StoredNode]:
        """The nodes that exist among `node_ids`, with their fingerprints, in that order."""
        ...

    async def leaf_knowledge(
        self, user_id: str, leaf_ids: Sequence[str]
    ) -> dict[str, LeafKnowledge]:
        """What each of these L1s states (its facts as extracted, its entity surfaces), for
        those that state something."""
        ...

    async def expiry_page(self, user_id: str, offset: int, limit: int) -> list[tuple[str, float]]:
        """Message deadlines (event id, epoch seconds), earliest first, from `offset`."""
        ...


class BackupStore(BackupReads, SegmenterStore, ConsolidatorStore, Forgetting, Protocol):
    """What the import reads and writes: the reads above and the workers' commits."""

    async def open_data_key(self, user_id: str) -> None:
        """Make the user's data key if it has none, whatever its tombstone says: an import
        brings a user back on purpose (docs/forget-everywhere.md)."""
        ...
