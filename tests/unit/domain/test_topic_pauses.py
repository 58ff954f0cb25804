"""Which tenants' turns topics are paused (`domain.topic_pauses`)."""

from __future__ import annotations

from memstream.domain.fair_share import Share, served_first
from memstream.domain.topic_pauses import Pauses, decided, took, trickle_records

SHARE = Share(rate=10.0, burst=5.0)
FLOOD, QUIET = "turns.acme", "turns.globex"


def test_a_topic_over_its_share_is_paused_while_another_has_traffic() -> None:
    state = took(Pauses(), {QUIET: 1, FLOOD: 20}, now=0.0, share=SHARE)
    state = decided(state, 0.0, SHARE, longest_s=5.0)
    assert state.paused == {FLOOD}


def test_a_topic_alone_is_never_paused_by_its_own_backlog() -> None:
    state = took(Pauses(), {FLOOD: 500}, now=0.0, share=SHARE)
    # Its own records waiting (behind) do not count: only another topic's would.
    state = decided(state, 0.0, SHARE, longest_s=5.0, behind=[FLOOD])
    assert state.paused == frozenset()


def test_another_topic_behind_pauses_one_over_its_share() -> None:
    state = took(Pauses(), {FLOOD: 20}, now=0.0, share=SHARE)
    state = took(state, {QUIET: 1}, now=-5.0, share=SHARE)  # long quiet: not active
    state = decided(state, 0.0, SHARE, longest_s=5.0, behind=[QUIET])
    assert state.paused == {FLOOD}


def test_a_topic_within_its_share_is_not_paused() -> None:
    state = took(Pauses(), {QUIET: 5, FLOOD: 1}, now=0.0, share=SHARE)
    state = decided(state, 0.0, SHARE, longest_s=5.0)
    assert QUIET not in state.paused


def test_paused_until_the_others_are_quiet() -> None:
    state = took(Pauses(), {QUIET: 1, FLOOD: 20}, now=0.0, share=SHARE)
    state = decided(state, 0.0, SHARE, longest_s=60.0)
    # The bucket refilled long ago, but the quiet tenant keeps sending: still paused.
    for now in (1.0, 2.0, 3.0, 4.0):
        state = took(state, {QUIET: 1}, now=now, share=SHARE)
        state = decided(state, now, SHARE, longest_s=60.0)
        assert state.paused == {FLOOD}
    # No record of the quiet tenant for longer than ACTIVE_S: resumed.
    state = decided(state, 7.5, SHARE, longest_s=60.0)
    assert state.paused == frozenset()


def test_resumed_after_the_longest_wait_once_its_bucket_has_refilled() -> None:
    state = took(Pauses(), {QUIET: 1, FLOOD: 45}, now=0.0, share=SHARE)
    state = decided(state, 0.0, SHARE, longest_s=2.0)
    # At 2.5 s the longest wait is over, but the debt (40 turns) takes 4.5 s to refill.
    state = took(state, {QUIET: 1}, now=2.5, share=SHARE)
    assert decided(state, 2.5, SHARE, longest_s=2.0).paused == {FLOOD}
    state = took(state, {QUIET: 1}, now=4.6, share=SHARE)
    state = decided(state, 4.6, SHARE, longest_s=2.0)
    assert state.paused == frozenset()
    # Its burst goes through, then it is paused again.
    state = took(state, {FLOOD: 6, QUIET: 1}, now=4.7, share=SHARE)
    assert decided(state, 4.7, SHARE, longest_s=2.0).paused == {FLOOD}


def test_records_of_paused_topics_are_served_last_each_in_its_order() -> None:
    topics = [FLOOD, QUIET, FLOOD, QUIET, "turns"]
    assert served_first(topics, {FLOOD}) == [1, 3, 4, 0, 2]
    assert served_first(topics, set()) == [0, 1, 2, 3, 4]


def test_two_tenants_over_their_shares_do_not_pause_each_other() -> None:
    # The quiet tenant sent a burst of its own: briefly over its share beside the flood, it
    # is not paused; the flood is, once the quiet tenant sends within its share again.
    state = took(Pauses(), {QUIET: 8, FLOOD: 20}, now=0.0, share=SHARE)
    state = decided(state, 0.0, SHARE, longest_s=5.0)
    assert state.paused == frozenset()
    # The quiet tenant's next record, half a second on, is within its share again.
    state = took(state, {QUIET: 1}, now=0.5, share=SHARE)
    state = decided(state, 0.5, SHARE, longest_s=5.0)
    assert state.paused == {FLOOD}


def test_a_tenant_is_within_its_share_by_how_it_sends_not_how_it_was_fetched() -> None:
    # A second of the quiet tenant's records (8, within its share of 10 a second) fetched
    # at once, late: more than its burst taken at once, but sent within its share.
    state = took(Pauses(), {QUIET: 1}, now=0.0, share=SHARE, sent_at=0.0)
    for n in range(1, 9):
        state = took(state, {QUIET: 1}, now=1.0, share=SHARE, sent_at=n / 8)
    assert state.buckets[QUIET].at_time(1.0, SHARE) < 0.0
    assert state.sends_within(QUIET)
    # So the flood beside it is paused once its own burst is spent.
    state = took(state, {FLOOD: 20}, now=1.0, share=SHARE)
    assert decided(state, 1.0, SHARE, longest_s=5.0).paused == {FLOOD}


def test_a_backlog_sent_at_once_long_ago_is_not_within_its_share() -> None:
    state = took(Pauses(), {FLOOD: 500}, now=100.0, share=SHARE, sent_at=10.0)
    assert not state.sends_within(FLOOD)


def test_a_clock_ahead_is_charged_as_now() -> None:
    state = took(Pauses(), {QUIET: 5}, now=0.0, share=SHARE, sent_at=60.0)
    assert state.sending[QUIET].at == 0.0


def trickling_flood(longest_s: float = 2.0) -> Pauses:
    """The flood paused beside the quiet tenant, then let through by its longest wait."""
    state = took(Pauses(), {QUIET: 1, FLOOD: 10}, now=0.0, share=SHARE)
    state = decided(state, 0.0, SHARE, longest_s=longest_s)
    assert state.paused == {FLOOD}
    state = took(state, {QUIET: 1}, now=2.5, share=SHARE)
    state = decided(state, 2.5, SHARE, longest_s=longest_s)
    assert state.paused == frozenset() and state.trickling == {FLOOD}
    return state


def test_the_longest_waits_burst_ends_in_debt_whatever_the_others_hold() -> None:
    state = trickling_flood()
    # The quiet tenant is itself briefly over its share (a burst of its own), the flood's
    # burst is spent: the flood is paused again all the same.
    state = took(state, {QUIET: 20, FLOOD: 6}, now=2.6, share=SHARE)
    state = decided(state, 2.6, SHARE, longest_s=2.0)
    assert state.paused == {FLOOD}


def test_a_trickle_within_its_burst_goes_on() -> None:
    state = trickling_flood()
    state = took(state, {QUIET: 1, FLOOD: 3}, now=2.6, share=SHARE)
    state = decided(state, 2.6, SHARE, longest_s=2.0)
    assert state.paused == frozenset() and state.trickling == {FLOOD}


def test_a_tenant_alone_owes_nothing_for_its_backlog() -> None:
    state = took(Pauses(), {FLOOD: 5_000}, now=0.0, share=SHARE)
    state = decided(state, 0.0, SHARE, longest_s=5.0)
    assert state.paused == frozenset()
    assert state.buckets[FLOOD].at_time(0.0, SHARE) == 0.0
    # Another tenant comes a second later: the flood's bucket refilled from empty, not
    # from 5,000 turns in debt, so its longest wait lets it through as usual.
    state = took(state, {QUIET: 1, FLOOD: 20}, now=1.0, share=SHARE)
    state = decided(state, 1.0, SHARE, longest_s=2.0)
    assert state.paused == {FLOOD}
    state = took(state, {QUIET: 1}, now=4.0, share=SHARE)
    assert decided(state, 4.0, SHARE, longest_s=2.0).trickling == {FLOOD}


def test_a_tenant_beside_another_keeps_its_debt() -> None:
    state = took(Pauses(), {QUIET: 1, FLOOD: 500}, now=0.0, share=SHARE)
    state = decided(state, 0.0, SHARE, longest_s=5.0)
    assert state.buckets[FLOOD].at_time(0.0, SHARE) < 0.0


def test_records_of_topics_over_their_share_or_trickling_are_held_back() -> None:
    state = trickling_flood()
    assert state.held_back(2.5, SHARE) == {FLOOD}
    state = took(Pauses(), {QUIET: 1, FLOOD: 10}, now=0.0, share=SHARE)
    assert state.held_back(0.0, SHARE) == {FLOOD}  # in debt, not yet paused
    assert Pauses().held_back(0.0, SHARE) == frozenset()


def test_a_trickles_old_records_do_not_pause_the_tenant_it_waited_for() -> None:
    state = trickling_flood()
    # The trickle brings records that waited through the longest wait (behind), while the
    # quiet tenant's records, sent within its share, were fetched bunched (in debt).
    for n in range(1, 9):
        state = took(state, {QUIET: 1}, now=2.6, share=SHARE, sent_at=2.6 - 1.0 + n / 8)
    state = took(state, {FLOOD: 3}, now=2.6, share=SHARE, sent_at=0.1)
    assert state.buckets[QUIET].at_time(2.6, SHARE) < 0.0
    state = decided(state, 2.6, SHARE, longest_s=2.0, behind=[FLOOD])
    assert QUIET not in state.paused


def test_a_tenant_sending_within_its_share_is_never_paused() -> None:
    # Two tenants within their shares, one fetched bunched beside the other: neither paused.
    state = took(Pauses(), {FLOOD: 1}, now=0.0, share=SHARE)
    for n in range(8):
        state = took(state, {QUIET: 1}, now=1.0, share=SHARE, sent_at=n / 8)
    state = took(state, {FLOOD: 1}, now=1.0, share=SHARE)
    assert state.buckets[QUIET].at_time(1.0, SHARE) < 0.0
    assert decided(state, 1.0, SHARE, longest_s=5.0, behind=[FLOOD]).paused == frozenset()


def trickles_in(seconds: float, steps: int) -> list[int]:
    """The records of each of the flood's trickles while the quiet tenant sends each tenth
    of a second, each trickle fetched a record at a time until it is paused again."""
    state = took(Pauses(), {QUIET: 1, FLOOD: 10}, now=0.0, share=SHARE)
    state = decided(state, 0.0, SHARE, longest_s=2.0, steps=steps)
    trickles = []
    for tick in range(1, round(seconds * 10) + 1):
        now = tick / 10
        state = took(state, {QUIET: 1}, now=now, share=SHARE)
        state = decided(state, now, SHARE, longest_s=2.0, steps=steps)
        if FLOOD in state.trickling:
            trickles.append(0)
            while FLOOD not in state.paused:
                trickles[-1] += 1
                state = took(state, {FLOOD: 1}, now=now, share=SHARE)
                state = decided(state, now, SHARE, longest_s=2.0, steps=steps)
    return trickles


def test_a_longest_waits_burst_goes_through_in_small_steps() -> None:
    # One trickle of a whole burst at each longest wait, or four of a quarter burst each.
    assert trickles_in(4.0, steps=1) == [6, 6]
    quarters = trickles_in(4.0, steps=4)
    assert len(quarters) >= 6 and max(quarters) <= 3
    assert trickle_records(SHARE, 4) == 1 and trickle_records(SHARE, 1) == 5
