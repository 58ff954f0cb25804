from hypothesis import given
from hypothesis import strategies as st

from memstream.segmenter.handler import tapered_steps


@given(st.integers(min_value=0, max_value=20_000), st.integers(min_value=1, max_value=4096))
def test_the_steps_cover_the_batch_in_order_each_at_most_the_step_size(
    count: int, size: int
) -> None:
    bounds = tapered_steps(count, size)
    assert [lo for lo, _ in bounds] == [0, *(hi for _, hi in bounds[:-1])][: len(bounds)]
    assert (bounds[-1][1] if bounds else 0) == count
    assert all(0 < hi - lo <= size for lo, hi in bounds)


@given(st.integers(min_value=129, max_value=20_000))
def test_the_last_step_of_a_large_batch_is_small(count: int) -> None:
    bounds = tapered_steps(count, 1024)
    assert bounds[-1][1] - bounds[-1][0] <= 128
    # Halving adds a handful of steps, not one per 128 records.
    assert len(bounds) <= -(-count // 1024) + 4


def test_full_steps_first_then_the_rest_halved_down_to_the_smallest() -> None:
    assert tapered_steps(978, 1024) == [(0, 489), (489, 734), (734, 856), (856, 978)]
    assert tapered_steps(2100, 1024)[:2] == [(0, 1024), (1024, 2048)]
    assert tapered_steps(100, 1024) == [(0, 100)]
    assert tapered_steps(6, 3) == [(0, 3), (3, 6)]
