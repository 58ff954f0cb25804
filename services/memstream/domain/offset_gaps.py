"""Records a consumer stepped over: offsets of a partition between two records it handed
over one after the other.

A topic memstream reads is neither compacted nor written in transactions, so each
partition's offsets follow one another, and a record that comes more than one offset after
the one before it in its partition means the consumer skipped the ones between. The
embedded broker does that under load: with two producers appending to a partition at once,
a consumer at the partition's end was handed a later batch before an earlier one became
readable, and moved on past it (`memstream_lab.bench.broker_tail` shows it); the skipped
records are in the log when read again. A jump larger than `most` is a partition taken over
from another worker (it starts from the group's committed offset), not a skip.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Skipped:
    """The offsets of `partition` stepped over just before the batch's record at `before`."""

    before: int
    partition: int
    offsets: range


def skipped(
    next_of: Mapping[int, int], places: Sequence[tuple[int, int]], most: int
) -> tuple[list[Skipped], dict[int, int]]:
    """The runs of offsets stepped over in a batch of records at `places` ((partition,
    offset), in the order the consumer handed them over), given the offset expected next in
    each partition (`next_of`, from the batches before); and the offsets expected after the
    batch. A record at or before the one expected (a partition read again) is no skip."""
    expected = dict(next_of)
    found: list[Skipped] = []
    for position, (partition, offset) in enumerate(places):
        wanted = expected.get(partition)
        if wanted is not None and wanted < offset <= wanted + most:
            found.append(Skipped(position, partition, range(wanted, offset)))
        expected[partition] = offset + 1
    return found, expected
