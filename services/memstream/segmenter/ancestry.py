"""Reading the stored windows above a set of leaves, shared by a forget and a rebuild."""

from __future__ import annotations

from collections.abc import Iterable

from memstream.domain.models import MemoryNode
from memstream.ports import TreeStore


async def stored_ancestors(
    tree: TreeStore, user_id: str, nodes: Iterable[MemoryNode]
) -> dict[str, MemoryNode]:
    """Every stored node above `nodes`, by id: one read per level climbed."""
    ancestors: dict[str, MemoryNode] = {}
    parents = {n.parent_id for n in nodes if n.parent_id}
    while parents:
        found = await tree.get_many(user_id, sorted(parents - set(ancestors)))
        ancestors.update((n.id, n) for n in found)
        parents = {n.parent_id for n in found if n.parent_id and n.parent_id not in ancestors}
    return ancestors
