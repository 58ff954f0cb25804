"""The tombstone's rules: which records predate a forget, which commits it refuses."""

from __future__ import annotations

from memstream.domain.forgetting import Guard, Tombstone, lifetime_s

STONE = Tombstone(forgotten_at=1000.0, partition=2, offset=50, record_ts=990.0)


def test_records_before_the_forget_in_its_partition_predate_it() -> None:
    assert STONE.predates(2, 49, 980.0)
    assert STONE.predates(2, 0, None)
    assert not STONE.predates(2, 50, 990.0)  # the forget itself is applied again
    assert not STONE.predates(2, 51, 995.0)  # appended after: a fresh start


def test_a_recreated_topic_starts_offsets_again_but_not_broker_time() -> None:
    assert not STONE.predates(2, 3, 2000.0)


def test_without_a_position_broker_time_decides() -> None:
    direct = Tombstone(forgotten_at=1000.0)  # forgotten on the stores by the API
    assert direct.predates(0, 10, 999.0)
    assert not direct.predates(0, 10, 1001.0)
    assert not direct.predates(0, 10, None)
    assert STONE.predates(3, 10, 999.0)  # another partition: by time


def test_a_guard_refuses_a_new_tombstone_but_not_an_expired_one() -> None:
    assert Guard(None).allows(None)
    assert not Guard(None).allows(STONE)
    assert Guard(STONE).allows(STONE)
    assert Guard(STONE).allows(None)  # expired: nothing was forgotten in between
    assert not Guard(STONE).allows(Tombstone(forgotten_at=2000.0))


def test_the_lifetime_covers_every_topic_a_replay_reads() -> None:
    week_ms = 7 * 24 * 3600 * 1000
    assert lifetime_s(week_ms, week_ms) == 14 * 24 * 3600
    assert lifetime_s(week_ms, -1) is None  # kept forever: so is the tombstone
