"""Whether the tree (Redis) and the index (Qdrant) still describe the same nodes.

Both stores hold every node, so for a user the tree's count of nodes per level and the
index's must agree. A store that was lost shows as a whole: one of them empty while the
other is not. That is the state recall cannot hide (it answers 200 with no memories), so it
makes readiness fail until a repair; a few users that differ are counted and alerted on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

# The metric's `kind` label for each way the stores can disagree.
INDEX_EMPTY = "index_empty"
TREE_EMPTY = "tree_empty"
USERS_DIFFERING = "users_differing"
KINDS = (INDEX_EMPTY, TREE_EMPTY, USERS_DIFFERING)

Gap = tuple[int, int, int]  # level, nodes in the tree, points in the index


@dataclass(frozen=True, slots=True)
class Divergence:
    index_empty: bool  # the index holds no point while the tree has nodes
    tree_empty: bool  # the tree holds no node while the index has points
    users_checked: int
    users_differing: tuple[str, ...]  # sampled users whose counts per level disagree
    # For each user differing, (level, tree count, index count) at each level that differs:
    # what tells a node lost from one store from a write in flight between them (`confirmed`).
    gaps: Mapping[str, tuple[Gap, ...]] = field(default_factory=dict)

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


def gaps_per_level(tree: Mapping[int, int], index: Mapping[int, int]) -> tuple[Gap, ...]:
    """(level, tree count, index count) for each level whose counts differ."""
    return tuple((lv, tree.get(lv, 0), index.get(lv, 0)) for lv in levels_differing(tree, index))


def divergence(
    tree_has_nodes: bool,
    index_points: int,
    per_user: Mapping[str, tuple[Mapping[int, int], Mapping[int, int]]],
) -> Divergence:
    """The stores' agreement from what was read: whether the tree has a node, how many points
    the index has, and for each sampled user its counts per level in the tree and the index."""
    gaps = {u: gaps_per_level(t, i) for u, (t, i) in sorted(per_user.items())}
    differing: Sequence[str] = [u for u, gap in gaps.items() if gap]
    return Divergence(
        index_empty=tree_has_nodes and index_points == 0,
        tree_empty=not tree_has_nodes and index_points > 0,
        users_checked=len(per_user),
        users_differing=tuple(differing),
        gaps={u: gaps[u] for u in differing},
    )


def confirmed(earlier: Divergence | None, latest: Divergence) -> Divergence:
    """`latest` counting as differing only the users whose gap `earlier` found too (none at
    the first check, which has nothing before it).

    A step writes the index before the tree, and a forget empties the tree before the index,
    so a user being written shows for a moment more points than nodes; under a flood some
    sampled user is caught like that at almost every check, often by the same amount. Such a
    gap is confirmed only when nothing was written between the checks (the same counts). A
    tree ahead of its index is never a write in flight: the same gap twice confirms it,
    however many writes came between.
    """
    before = earlier.gaps if earlier is not None else {}
    kept = tuple(u for u in latest.users_differing if _same_gap(before.get(u), latest.gaps[u]))
    return replace(latest, users_differing=kept, gaps={u: latest.gaps[u] for u in kept})


def _same_gap(earlier: tuple[Gap, ...] | None, latest: tuple[Gap, ...]) -> bool:
    if earlier is None:
        return False
    if earlier == latest:
        return True
    differences = [(lv, tree - index) for lv, tree, index in latest]
    tree_ahead = all(d > 0 for _, d in differences)
    return tree_ahead and differences == [(lv, tree - index) for lv, tree, index in earlier]
