"""A record more than one offset after the one before it in its partition: the consumer
stepped over the records between (the embedded broker's tail under two producers)."""

from __future__ import annotations

from memstream.domain.offset_gaps import Skipped, skipped


def test_records_one_after_the_other_skip_nothing() -> None:
    gaps, after = skipped({0: 5}, [(0, 5), (1, 9), (0, 6), (1, 10)], most=100)
    assert gaps == [] and after == {0: 7, 1: 11}


def test_a_jump_names_the_offsets_stepped_over_and_where_in_the_batch() -> None:
    gaps, after = skipped({3: 5603}, [(3, 5603), (0, 1), (3, 5607), (3, 5608)], most=100)
    assert gaps == [Skipped(2, 3, range(5604, 5607))]
    assert after == {3: 5609, 0: 2}


def test_a_jump_between_two_batches_is_found_at_the_first_record_of_the_next() -> None:
    _, after = skipped({}, [(0, 10), (0, 11)], most=100)
    gaps, _ = skipped(after, [(0, 14)], most=100)
    assert gaps == [Skipped(0, 0, range(12, 14))]


def test_a_partition_read_again_or_taken_over_is_no_skip() -> None:
    gaps, after = skipped({0: 50, 1: 7}, [(0, 20), (0, 21), (1, 7_000)], most=1_024)
    assert gaps == [] and after == {0: 22, 1: 7_001}


def test_the_first_record_of_a_partition_skips_nothing() -> None:
    gaps, _ = skipped({}, [(2, 900)], most=1_024)
    assert gaps == []
