"""The tree and the index judged from their counts (`domain.divergence`)."""

from __future__ import annotations

from memstream.domain.divergence import confirmed, divergence, levels_differing

SAME = ({1: 4, 2: 2, 3: 1}, {1: 4, 2: 2, 3: 1})


def test_equal_counts_agree_and_a_missing_level_counts_zero() -> None:
    assert levels_differing({1: 4, 2: 0}, {1: 4}) == []
    assert levels_differing({1: 4, 2: 2}, {1: 3, 5: 1}) == [1, 2, 5]
    found = divergence(True, 7, {"ana": SAME})
    assert found.stores_agree and found.users_differing == ()
    assert found.by_kind() == {"index_empty": 0, "tree_empty": 0, "users_differing": 0}


def test_an_empty_index_beside_a_tree_is_not_ready_and_says_what_to_do() -> None:
    found = divergence(True, 0, {"ana": ({1: 4}, {})})
    assert found.index_empty and not found.stores_agree
    assert found.users_differing == ("ana",)
    assert "memstream repair" in found.reason
    assert found.by_kind() == {"index_empty": 1, "tree_empty": 0, "users_differing": 1}


def test_an_empty_tree_beside_an_index_is_not_ready() -> None:
    found = divergence(False, 9, {"ana": ({}, {1: 9})})
    assert found.tree_empty and not found.index_empty and not found.stores_agree


def test_two_empty_stores_agree_and_a_few_users_differing_stay_ready() -> None:
    assert divergence(False, 0, {}).stores_agree
    found = divergence(True, 12, {"ana": SAME, "bo": ({1: 3}, {1: 2})})
    assert found.stores_agree and found.users_differing == ("bo",)
    assert found.reason == "1 of 2 sampled users differ"


def test_a_gap_is_confirmed_by_the_next_check_unless_a_write_in_flight_explains_it() -> None:
    index_lost_a_leaf = ({1: 5, 2: 2}, {1: 4, 2: 2})
    tree_lost_a_leaf = ({1: 4}, {1: 5})
    first = divergence(True, 9, {"ana": index_lost_a_leaf, "bo": tree_lost_a_leaf, "cy": SAME})
    assert first.users_differing == ("ana", "bo") and first.gaps["ana"] == ((1, 5, 4),)
    assert confirmed(None, first).users_differing == ()
    # ana and bo both written since: ana's tree is still one ahead, which no write in flight
    # does; bo's index one ahead is what a step caught between its two writes looks like.
    written = divergence(True, 11, {"ana": ({1: 7, 2: 2}, {1: 6, 2: 2}), "bo": ({1: 6}, {1: 7})})
    found = confirmed(first, written)
    assert found.users_differing == ("ana",) and found.reason == "1 of 2 sampled users differ"
    still = divergence(True, 11, {"ana": ({1: 7, 2: 2}, {1: 6, 2: 2}), "bo": ({1: 6}, {1: 7})})
    assert confirmed(written, still).users_differing == ("ana", "bo")  # nothing written since
    moved = divergence(True, 12, {"ana": ({1: 9, 2: 2}, {1: 6, 2: 2}), "bo": ({1: 7}, {1: 7})})
    assert confirmed(still, moved).users_differing == ()
