import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstream.adapters.embedding.passes import forward_passes, pass_cost

lengths_lists = st.lists(st.integers(min_value=1, max_value=256), max_size=150)


def _cost(lengths: list[int], passes: list[list[int]]) -> float:
    return sum(pass_cost(len(p), max(lengths[i] for i in p)) for p in passes)


@given(lengths_lists, st.integers(min_value=1, max_value=80))
def test_every_text_goes_in_exactly_one_pass_of_at_most_max_texts(
    lengths: list[int], max_texts: int
) -> None:
    passes = forward_passes(lengths, max_texts)
    assert sorted(i for p in passes for i in p) == list(range(len(lengths)))
    assert all(0 < len(p) <= max_texts for p in passes)


@given(lengths_lists, st.integers(min_value=1, max_value=80))
def test_the_passes_cost_no_more_than_fixed_slices_of_the_sorted_texts(
    lengths: list[int], max_texts: int
) -> None:
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    fixed = [order[lo : lo + max_texts] for lo in range(0, len(order), max_texts)]
    assert _cost(lengths, forward_passes(lengths, max_texts)) <= _cost(lengths, fixed) + 1e-9


@given(lengths_lists)
def test_passes_go_from_the_shortest_texts_to_the_longest(lengths: list[int]) -> None:
    padded = [[lengths[i] for i in p] for p in forward_passes(lengths, 64)]
    flat = [n for p in padded for n in p]
    assert flat == sorted(flat)


def test_a_batch_of_mixed_lengths_is_cut_where_padding_would_cost_more() -> None:
    # Twenty short texts and four long ones: one pass would pad the short ones to 120.
    lengths = [10] * 20 + [120] * 4
    passes = forward_passes(lengths, 64)
    assert [sorted(p) for p in passes] == [list(range(20)), list(range(20, 24))]


def test_texts_of_one_length_share_one_pass_up_to_the_limit() -> None:
    assert [len(p) for p in forward_passes([30] * 64, 64)] == [64]
    assert len(forward_passes([30] * 70, 64)) == 2  # any split of 70 into two costs the same


def test_no_texts_no_passes_and_the_limit_must_be_positive() -> None:
    assert forward_passes([], 64) == []
    with pytest.raises(ValueError):
        forward_passes([3], 0)
