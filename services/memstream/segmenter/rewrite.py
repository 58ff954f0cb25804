"""Writing a stored leaf again and finding the stored windows above leaves: what a message
forget and a rebuild both do to a user's tree."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from memstream.domain.derivation import Derivation
from memstream.domain.models import Level, MemoryNode, Turn
from memstream.domain.nodes import rewritten_leaf
from memstream.ports import LanguageModel, NodeReader


async def stored_ancestors(
    tree: NodeReader, user_id: str, nodes: Iterable[MemoryNode]
) -> dict[str, MemoryNode]:
    """Every stored node above `nodes`, by id: one read per level climbed."""
    ancestors: dict[str, MemoryNode] = {}
    parents = {n.parent_id for n in nodes if n.parent_id}
    while parents:
        found = await tree.get_many(user_id, sorted(parents - set(ancestors)))
        ancestors.update((n.id, n) for n in found)
        parents = {n.parent_id for n in found if n.parent_id and n.parent_id not in ancestors}
    return ancestors


async def later_profiles(
    tree: NodeReader, user_id: str, leaves: Sequence[MemoryNode], skip: Iterable[str]
) -> list[MemoryNode]:
    """The stored profiles (L5) that end after the first of `leaves` begins, but for those in
    `skip` (their own ancestors): a profile states the facts still holding when it was
    written, so a forget of these leaves' messages may reach them too."""
    if not leaves:
        return []
    since = min(n.t_start for n in leaves).timestamp()
    ids = await tree.level_ids(user_id, Level.MONTH, since, limit=10_000)
    skipped = set(skip)
    return await tree.get_many(user_id, [i for i in ids if i not in skipped])


async def leaf_written_again(
    tree: NodeReader,
    llm: LanguageModel,
    leaf: MemoryNode,
    turns: Sequence[Turn],
    *,
    history_window: int,
    derivation: Derivation | None,
) -> MemoryNode:
    """`leaf` written from `turns` (its verbatim messages, or those a forget left) with the
    current backend: same id and parent, version + 1, the current derivation."""
    history: Sequence[MemoryNode] = []
    if history_window:
        history = await tree.recent(leaf.user_id, Level.SEGMENT, history_window, leaf.t_start)
    summary = await llm.write_segment(turns, history)
    return replace(rewritten_leaf(leaf, turns, summary), derivation=derivation)
