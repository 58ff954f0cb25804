"""Heatmap ordering and the leaves a pool lacks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

from hypothesis import given
from hypothesis import strategies as st

from memstream.domain.entity_heatmap import (
    heat,
    leaves_to_join,
    rank_by_entities,
    rarity,
    weighted_heat,
)


def test_leaves_naming_more_query_entities_come_first_ties_in_order() -> None:
    candidates = [
        ("l1", {"mel"}),
        ("l2", {"mel", "anna"}),
        ("l3", set()),
        ("l4", {"anna"}),
        ("l5", {"mel", "anna", "paris"}),
    ]
    assert rank_by_entities(candidates, {"mel", "anna"}) == ("l2", "l5", "l1", "l4", "l3")
    assert rank_by_entities(candidates, set()) == ("l1", "l2", "l3", "l4", "l5")


def test_missing_leaves_join_hottest_first_and_bounded() -> None:
    entity_leaves = {"mel": ["l1", "l2", "l7"], "anna": ["l7", "l8"], "bob": ["l9"]}
    # l7 names both; then the rarer entity's leaf (anna has two leaves, mel three).
    assert leaves_to_join(entity_leaves, ["mel", "anna"], pool={"l1"}) == ("l7", "l8", "l2")
    # mel's three leaves cannot all join in two places: none joins for naming mel alone.
    assert leaves_to_join(entity_leaves, ["mel", "anna"], pool={"l1"}, limit=2) == ("l7", "l8")
    assert leaves_to_join(entity_leaves, ["mel"], pool=set(), limit=0) == ()
    assert leaves_to_join(entity_leaves, ["nobody"], pool=set()) == ()


KEYS = st.frozensets(st.sampled_from("abcde"))


@given(st.lists(st.tuples(st.text("xyz", min_size=1, max_size=3), KEYS), max_size=12), KEYS)
def test_ranking_is_a_stable_sort_by_heat(
    candidates: list[tuple[str, frozenset[str]]], query: frozenset[str]
) -> None:
    ranked = rank_by_entities(candidates, query)
    assert set(ranked) == {leaf for leaf, _ in candidates}
    # a leaf listed twice ranks by its hotter listing
    heats = [max(heat(k, query) for leaf_id, k in candidates if leaf_id == leaf) for leaf in ranked]
    assert heats == sorted(heats, reverse=True)


def test_a_common_entity_alone_joins_nothing_but_its_leaves_naming_another() -> None:
    speaker = [f"s{i}" for i in range(30)]
    entity_leaves = {"caroline": speaker, "oscar": ["s3", "p1"]}
    assert leaves_to_join(entity_leaves, ["caroline"], pool=set(), limit=20) == ()
    assert leaves_to_join(entity_leaves, ["caroline", "oscar"], pool=set(), limit=20) == (
        "s3",
        "p1",
    )


@given(
    st.dictionaries(st.sampled_from("abcde"), st.lists(st.sampled_from("pqrstuvw"), max_size=5)),
    st.lists(st.sampled_from("abcde"), max_size=4),
    st.frozensets(st.sampled_from("pqrstuvw")),
    st.integers(0, 10),
)
def test_joined_leaves_are_new_bounded_and_of_the_query_entities(
    entity_leaves: dict[str, list[str]], query: list[str], pool: frozenset[str], limit: int
) -> None:
    joined = leaves_to_join(entity_leaves, query, pool, limit)
    assert len(joined) <= limit and len(set(joined)) == len(joined)
    assert not set(joined) & pool
    assert all(any(leaf in entity_leaves.get(k, ()) for k in query) for leaf in joined)


def test_rarity_is_near_one_for_a_rare_entity_and_near_zero_for_an_everywhere_one() -> None:
    assert rarity(1, 400) == 1.0
    assert rarity(400, 400) == 0.0
    assert rarity(260, 400) < 0.1 < 0.6 < rarity(7, 400)
    assert rarity(0, 400) == rarity(3, 1) == 0.0


def test_weighted_heat_counts_each_query_entity_once_by_its_weight() -> None:
    weights = {"mel": 0.1, "kids": 0.7}
    assert weighted_heat(["mel", "kids", "kids", "paris"], weights) == 0.1 + 0.7
    assert weighted_heat([], weights) == 0.0


class _Looked(Sequence[str]):
    """An entity's leaves, newest first, that count how many of them are looked at."""

    def __init__(self, leaf_ids: Sequence[str]) -> None:
        self._ids = tuple(leaf_ids)
        self.looked = 0

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[str, ...]: ...
    def __getitem__(self, i: int | slice) -> str | tuple[str, ...]:
        got = self._ids[i]
        self.looked += len(got) if isinstance(got, tuple) else 1
        return got

    def __iter__(self):  # type: ignore[no-untyped-def]
        raise AssertionError("every leaf of the entity walked")


def test_the_join_looks_at_a_bounded_number_of_leaves_of_an_entity_named_in_thousands() -> None:
    # A heavy user's friend and sister, each named in 5,000 leaves (every seventh by both):
    # the join looks at the newest `scan` of each, and finds the newest shared ones there.
    friend = _Looked([f"l{i}" for i in range(10_000, 0, -1) if i % 2 == 0 or i % 7 == 0][:5_000])
    sister = _Looked([f"l{i}" for i in range(10_000, 0, -1) if i % 2 == 1 or i % 7 == 0][:5_000])
    shared = [i for i in friend[:1_000] if i in set(sister[:1_000])]
    friend.looked = sister.looked = 0
    found = leaves_to_join(
        {"friend": friend, "sister": sister}, ["friend", "sister"], {"l9996"}, 20, 1_000
    )
    assert found == tuple(i for i in shared if i != "l9996")[:20]
    assert friend.looked <= 1_000 and sister.looked <= 1_000
    # One entity alone: none of its leaves can join (too many), and none is looked at.
    friend.looked = 0
    assert leaves_to_join({"friend": friend}, ["friend"], set(), 20, 1_000) == ()
    assert friend.looked == 0


@given(
    st.dictionaries(
        st.sampled_from(["mel", "anna", "bob"]),
        st.lists(st.sampled_from([f"l{i}" for i in range(40)]), unique=True, max_size=40),
    ),
    st.lists(st.sampled_from(["mel", "anna", "bob", "zed"]), max_size=4),
    st.sets(st.sampled_from([f"l{i}" for i in range(40)])),
    st.integers(0, 25),
)
def test_the_scan_changes_nothing_while_every_entity_has_fewer_leaves(
    lists: dict[str, list[str]], keys: list[str], pool: set[str], limit: int
) -> None:
    # Below the scan (LoCoMo's users, whose largest entity has about 700 leaves), the join
    # is what it was when it looked at every leaf.
    assert leaves_to_join(lists, keys, pool, limit, scan=40) == _every_leaf_join(
        lists, keys, pool, limit
    )


def _every_leaf_join(
    lists: dict[str, list[str]], keys: list[str], pool: set[str], limit: int
) -> tuple[str, ...]:
    """The join as it was before the scan: every leaf of every entity looked at."""
    if limit <= 0:
        return ()
    missing: dict[str, int] = {}
    rarest: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    for key in dict.fromkeys(keys):
        leaves = lists.get(key, [])
        for leaf_id in leaves:
            if leaf_id not in pool:
                missing[leaf_id] = missing.get(leaf_id, 0) + 1
                rarest[leaf_id] = min(rarest.get(leaf_id, len(leaves)), len(leaves))
                first_seen.setdefault(leaf_id, len(first_seen))
    joinable = [i for i in missing if missing[i] > 1 or rarest[i] <= limit]
    return tuple(sorted(joinable, key=lambda i: (-missing[i], rarest[i], first_seen[i]))[:limit])
