"""Entity heatmap for recall: pure helpers over leaf ids and entity keys.

A question that names several entities ("What did Melanie and her sister paint?") is best
answered by the leaves that name most of them, so candidates are ordered by how many of
the query's entities they mention. Leaves of a named entity that the dense and lexical
searches missed join the pool, a bounded number of them.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

# How many leaves the heatmap may add to a pool unless the caller says otherwise.
DEFAULT_JOIN_LIMIT = 20
# How many of each entity's newest leaves the join looks at unless the caller says otherwise.
DEFAULT_JOIN_SCAN = 1_000


def heat(leaf_keys: Collection[str], query_keys: Collection[str]) -> int:
    """How many of the query's entities a leaf mentions."""
    return len(set(leaf_keys) & set(query_keys))


def rarity(entity_leaves: int, all_leaves: int) -> float:
    """How much naming an entity tells about a leaf, in [0, 1]: the log of its inverse share
    of the leaves, over the log of all of them. An entity in one leaf of many is near 1; a
    speaker of most leaves near 0, so intersecting with them adds almost nothing."""
    if all_leaves <= 1 or entity_leaves <= 0:
        return 0.0
    return max(0.0, min(1.0, math.log(all_leaves / entity_leaves) / math.log(all_leaves)))


def weighted_heat(leaf_keys: Collection[str], weights: Mapping[str, float]) -> float:
    """The query entities a leaf mentions, each counted by its weight (its rarity)."""
    return sum(weights.get(k, 0.0) for k in set(leaf_keys))


def rank_by_entities(
    candidates: Sequence[tuple[str, Collection[str]]], query_keys: Collection[str]
) -> tuple[str, ...]:
    """Candidate leaf ids, those naming more of the query's entities first, ties in order."""
    wanted = set(query_keys)
    order = sorted(range(len(candidates)), key=lambda i: -heat(candidates[i][1], wanted))
    return tuple(dict.fromkeys(candidates[i][0] for i in order))


def leaves_to_join(
    entity_leaves: Mapping[str, Sequence[str]],
    query_keys: Sequence[str],
    pool: Collection[str],
    limit: int = DEFAULT_JOIN_LIMIT,
    scan: int = DEFAULT_JOIN_SCAN,
) -> tuple[str, ...]:
    """Leaves of the query's entities missing from the pool, hottest first, at most `limit`.

    Among leaves of equal heat, those of the rarer entity come first (a pet named in five
    leaves says more of itself than a speaker in every leaf does), then the query's
    first-named entity's, each entity's in the order given (the caller passes them newest
    first). A leaf naming one of the query's entities only joins if that entity has no more
    than `limit` leaves: when they cannot all join, any few of them would be an arbitrary
    pick. Only the first `scan` leaves of each entity are looked at (its rarity still counts
    all of them), so the work is bounded whatever the user's history: the leaves of an
    entity named in more than `scan` leaves that two of the query's entities share are
    looked for among the newest ones.
    """
    if limit <= 0:
        return ()
    keys = list(dict.fromkeys(query_keys))
    if len(keys) == 1 and len(entity_leaves.get(keys[0], ())) > limit:
        return ()  # nothing is shared, and too many leaves to join them all
    missing: dict[str, int] = {}
    rarity: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    for key in keys:
        named = entity_leaves.get(key, ())
        size = len(named)
        for leaf_id in dict.fromkeys(named[:scan]):
            if leaf_id in pool:
                continue
            missing[leaf_id] = missing.get(leaf_id, 0) + 1
            rarity[leaf_id] = min(rarity.get(leaf_id, size), size)
            first_seen.setdefault(leaf_id, len(first_seen))
    joinable = [i for i in missing if missing[i] > 1 or rarity[i] <= limit]
    ordered = sorted(joinable, key=lambda i: (-missing[i], rarity[i], first_seen[i]))
    return tuple(ordered[:limit])
