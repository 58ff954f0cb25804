"""Heatmap ordering and the leaves a pool lacks."""

from __future__ import annotations

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
