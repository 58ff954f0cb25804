"""Whether the tree (Redis) and the index (Qdrant) still describe the same nodes.

Both stores hold every node, so for a user the tree's count of nodes per level and the
index's must agree. A store that was lost shows as a whole: one of them empty while the
other is not. That is the state recall cannot hide (it answers 200 with no memories), so it
makes readiness fail until a repair; a few users that differ are counted and alerted on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# The metric's `kind` label for each way the stores can disagree.
INDEX_EMPTY = "index_empty"
TREE_EMPTY = "tree_empty"
USERS_DIFFERING = "users_differing"
KINDS = (INDEX_EMPTY, TREE_EMPTY, USERS_DIFFERING)


@dataclass(frozen=True, slots=True)
class Divergence:
    index_empty: bool  # the index holds no point while the tree has nodes
    tree_empty: bool  # the tree holds no node while the index has points
    users_checked: int
    users_differing: tuple[str, ...]  # sampled users whose counts per level disagree

    @property
    def stores_agree(self) -> bool:
        """What readiness reports: false while a whole store is missing."""
        return not (self.index_empty or self.tree_empty)

    @property
    def reason(self) -> str:
        if self.index_empty:
            return "the index is empty while the tree has nodes: run `memstream repair --all`"
        if self.tree_empty:
            return "the tree is empty while the index has points: run `memstream repair --all`"
        if self.users_differing:
            return f"{len(self.users_differing)} of {self.users_checked} sampled users differ"
        return "the stores agree"

    def by_kind(self) -> dict[str, int]:
        return {
            INDEX_EMPTY: int(self.index_empty),
            TREE_EMPTY: int(self.tree_empty),
            USERS_DIFFERING: len(self.users_differing),
        }


def levels_differing(tree: Mapping[int, int], index: Mapping[int, int]) -> list[int]:
    """The levels whose counts differ between the two stores (a level absent counts 0)."""
    return sorted(lv for lv in set(tree) | set(index) if tree.get(lv, 0) != index.get(lv, 0))


def divergence(
    tree_has_nodes: bool,
    index_points: int,
    per_user: Mapping[str, tuple[Mapping[int, int], Mapping[int, int]]],
) -> Divergence:
    """The stores' agreement from what was read: whether the tree has a node, how many points
    the index has, and for each sampled user its counts per level in the tree and the index."""
    differing: Sequence[str] = sorted(u for u, (t, i) in per_user.items() if levels_differing(t, i))
    return Divergence(
        index_empty=tree_has_nodes and index_points == 0,
        tree_empty=not tree_has_nodes and index_points > 0,
        users_checked=len(per_user),
        users_differing=tuple(differing),
    )
