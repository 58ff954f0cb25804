"""Fair shares: what the segmenter keeps and what waits in the overflow, record by record."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memstream.domain.fair_share import (
    DEFAULT_TENANT,
    Kind,
    Pending,
    Share,
    is_behind,
    parse_position,
    position_field,
    queue_for,
    served_first,
    split,
    tenant_key,
    waits_on,
)
from memstream.domain.token_bucket import Bucket

SHARE = Share(rate=10.0, burst=3.0)


def turns(user: str, count: int) -> list[Pending]:
    return [Pending(user, Kind.TURN)] * count


def test_turns_within_the_burst_are_kept_the_rest_diverted() -> None:
    plan = split(turns("acme:ann", 5), set(), {}, SHARE, now=0.0)
    assert plan.kept == (0, 1, 2)
    assert plan.diverted == (3, 4)
    assert plan.diverted_by_tenant == {"acme": 2}


def test_a_flooding_tenant_does_not_take_the_share_of_another() -> None:
    flood = turns("acme:ann", 50)
    quiet = turns("globex:bo", 2)
    batch = flood[:25] + quiet[:1] + flood[25:] + quiet[1:]
    plan = split(batch, set(), {}, SHARE, now=0.0)
    kept_users = [batch[i].user_id for i in plan.kept]
    assert kept_users.count("globex:bo") == 2  # the quiet tenant loses nothing
    # Over its share beside a tenant within it, the flood spends none of its burst: the
    # quiet tenant's next records would arrive while the main path worked through it.
    assert kept_users.count("acme:ann") == 0
    assert plan.diverted_by_tenant == {"acme": 50}
    assert plan.buckets["acme"].tokens == 0.0


def test_the_bucket_refills_at_the_rate_between_batches() -> None:
    first = split(turns("acme:ann", 3), set(), {}, SHARE, now=0.0)
    assert first.diverted == ()
    # 0.25 s later, 2.5 tokens came back: two turns pass, and the user is not held (its
    # records went through), so the third is over the share again.
    second = split(turns("acme:bo", 3), set(), first.buckets, SHARE, now=0.25)
    assert second.kept == (0, 1)
    assert second.diverted == (2,)


def test_once_a_user_is_diverted_all_its_later_records_follow() -> None:
    batch = [*turns("acme:ann", 4), Pending("acme:ann", Kind.FOLLOWER), *turns("acme:ann", 1)]
    # An empty bucket for acme, refilled by 1.5 turns by the last record's time.
    buckets = {"acme": Bucket(0.0, 0.0)}
    plan = split(batch, set(), buckets, SHARE, now=0.15)
    assert plan.kept == (0,)
    assert plan.diverted == (1, 2, 3, 4, 5)  # the session end too, and the token left over


def test_a_held_user_goes_to_the_overflow_even_with_tokens_to_spare() -> None:
    batch = [*turns("acme:ann", 1), Pending("acme:ann", Kind.FOLLOWER), *turns("acme:bo", 1)]
    plan = split(batch, {"acme:ann"}, {}, SHARE, now=0.0)
    assert plan.diverted == (0, 1)
    assert plan.kept == (2,)


def test_a_forget_is_never_diverted() -> None:
    batch = [*turns("acme:ann", 5), Pending("acme:ann", Kind.FORGET), *turns("acme:ann", 1)]
    plan = split(batch, {"acme:ann"}, {}, SHARE, now=0.0)
    assert plan.kept == (5,)
    assert plan.diverted == (0, 1, 2, 3, 4, 6)


def test_ids_outside_every_tenant_share_one_default_tenant() -> None:
    assert tenant_key("ann") == tenant_key("bo") == DEFAULT_TENANT
    assert tenant_key("acme:ann") == "acme"
    assert tenant_key("ACME:ann") == DEFAULT_TENANT  # not a tenant name: no tenant
    plan = split(turns("ann", 2) + turns("bo", 2), set(), {}, SHARE, now=0.0)
    assert plan.kept == (0, 1, 2)
    assert plan.diverted_by_tenant == {DEFAULT_TENANT: 1}


def test_a_read_waits_for_a_diverted_record_at_or_before_its_own() -> None:
    diverted = [parse_position(position_field(3, 120))]
    assert diverted == [(3, 120)]
    assert waits_on(diverted, 3, 120)
    assert waits_on(diverted, 3, 200)  # after it in the user's order
    assert not waits_on(diverted, 3, 119)  # handled on the main path before the diversion
    assert not waits_on(diverted, 2, 500)  # another partition: another user's


users = st.sampled_from(["acme:ann", "acme:bo", "globex:cy", "dee"])
records = st.lists(
    st.builds(Pending, users, st.sampled_from([Kind.TURN, Kind.TURN, Kind.FOLLOWER, Kind.FORGET])),
    max_size=60,
)


@given(records, st.sets(users), st.floats(0.0, 2.0))
def test_every_record_once_in_order_and_each_user_stays_in_order(
    batch: list[Pending], held: set[str], now: float
) -> None:
    plan = split(batch, held, {}, SHARE, now)
    assert sorted(plan.kept + plan.diverted) == list(range(len(batch)))
    assert list(plan.kept) == sorted(plan.kept)
    assert list(plan.diverted) == sorted(plan.diverted)
    diverted = set(plan.diverted)
    for user in {r.user_id for r in batch}:
        mine = [i for i, r in enumerate(batch) if r.user_id == user and r.kind is not Kind.FORGET]
        sent = [i in diverted for i in mine]
        # Kept records first, then diverted ones: never a kept record after a diverted one
        # (it would overtake it); a held user has nothing kept at all.
        assert sent == sorted(sent)
        if user in held:
            assert all(sent)
    assert not any(batch[i].kind is Kind.FORGET for i in diverted)


def test_a_new_tenant_s_overflow_queue_is_the_least_taken_partition() -> None:
    assert queue_for({}, 3) == 0
    assert queue_for({"acme": 0, "globex": 2}, 3) == 1
    assert queue_for({"acme": 0, "globex": 1, "initech": 2}, 3) == 0  # all taken: shared
    assert queue_for({"acme": 1, "globex": 1, "initech": 0, "umbrella": 2}, 3) == 0


def test_tenants_within_their_share_are_served_before_those_over_it() -> None:
    tenants = ["acme", "globex", "acme", "initech", "globex"]
    assert served_first(tenants, {"acme"}) == [1, 3, 4, 0, 2]
    assert served_first(tenants, set()) == [0, 1, 2, 3, 4]


@given(records, st.sets(st.sampled_from(["acme", "globex", DEFAULT_TENANT])))
def test_serving_first_keeps_every_user_s_records_in_order(
    batch: list[Pending], over: set[str]
) -> None:
    order = served_first([tenant_key(r.user_id) for r in batch], over)
    assert sorted(order) == list(range(len(batch)))
    for user in {r.user_id for r in batch}:
        mine = [i for i in order if batch[i].user_id == user]
        assert mine == sorted(mine)


@given(records, st.floats(0.0, 2.0))
def test_no_tenant_gets_more_turns_through_than_its_burst_and_rate_allow(
    batch: list[Pending], now: float
) -> None:
    plan = split(batch, set(), {}, SHARE, now)
    for tenant in {tenant_key(r.user_id) for r in batch}:
        passed = [
            i
            for i in plan.kept
            if batch[i].kind is Kind.TURN and tenant_key(batch[i].user_id) == tenant
        ]
        assert len(passed) <= SHARE.burst


def test_shares_are_counted_in_the_log_s_time_not_when_the_segmenter_reads() -> None:
    # Thirty seconds of a tenant at 8 turns/s (its share is 10), read in one late batch:
    # nothing is diverted, though the batch holds far more than one burst.
    steady = [Pending("globex:bo", Kind.TURN, at=n / 8) for n in range(240)]
    assert split(steady, set(), {}, SHARE, now=500.0).diverted == ()
    # The same turns sent within one second are a flood, however late they are read.
    rushed = [Pending("globex:bo", Kind.TURN, at=n / 240) for n in range(240)]
    assert len(split(rushed, set(), {}, SHARE, now=500.0).kept) < 15


def test_behind_a_tenant_with_a_user_held_gets_none_of_its_share() -> None:
    batch = [Pending("acme:cy", Kind.TURN), *turns("acme:ann", 2), Pending("acme:dee", Kind.TURN)]
    buckets = {"acme": Bucket(3.0, 0.0)}
    # acme:ann waits in the overflow; acme's other users are within the bucket.
    on_time = split(batch, {"acme:ann"}, buckets, SHARE, now=0.0)
    late = split(batch, {"acme:ann"}, buckets, SHARE, now=0.0, behind=True)
    assert on_time.kept == (0, 3)
    assert late.kept == ()
    # Emptied, not saved up: once caught up, acme's bucket refills from nothing.
    assert late.buckets["acme"] == Bucket(0.0, 0.0)
    refilled = split(turns("acme:eve", 3), set(), late.buckets, SHARE, now=0.2)
    assert refilled.kept == (0, 1)  # 2 tokens came back in 0.2 s at 10 a second


def test_a_tenant_over_its_share_alone_on_time_keeps_its_burst_behind_none() -> None:
    batch = turns("acme:ann", 5)
    assert split(batch, set(), {}, SHARE, now=0.0).kept == (0, 1, 2)
    assert split(batch, set(), {}, SHARE, now=0.0, behind=True).kept == ()


def test_behind_a_tenant_within_its_share_keeps_every_turn() -> None:
    batch = turns("globex:bo", 3)
    plan = split(batch, set(), {}, SHARE, now=0.0, behind=True)
    assert plan.kept == (0, 1, 2)


def test_the_main_path_is_behind_when_its_oldest_record_waited_past_the_lag() -> None:
    batch = [Pending("acme:ann", Kind.TURN, at=9.9), Pending("acme:ann", Kind.TURN, at=9.5)]
    assert is_behind(batch, now=10.0, lag_s=0.25)
    assert not is_behind(batch, now=10.0, lag_s=0.6)
    assert not is_behind([Pending("acme:ann", Kind.TURN)], now=10.0, lag_s=0.0)


def test_a_tenant_whose_turns_all_wait_in_the_overflow_is_not_one_within_its_share() -> None:
    # acme's users are all held: its turns go to the overflow without a token, and it is
    # no tenant within its share that initech's burst would delay.
    batch = [*turns("acme:ann", 2), *turns("initech:bo", 5)]
    plan = split(batch, {"acme:ann"}, {}, SHARE, now=0.0)
    assert plan.kept == (2, 3, 4)
