"""Which tenants' turns topics are paused (`domain.topic_pauses`)."""

from __future__ import annotations

from memstream.domain.fair_share import Share, served_first
from memstream.domain.topic_pauses import Pauses, decided, took

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
    # The quiet tenant's records came bunched (a slow fetch): briefly in debt beside the
    # flood, it is not paused; the flood is, once the quiet tenant is within its share.
    state = took(Pauses(), {QUIET: 8, FLOOD: 20}, now=0.0, share=SHARE)
    state = decided(state, 0.0, SHARE, longest_s=5.0)
    assert state.paused == frozenset()
    state = decided(state, 0.5, SHARE, longest_s=5.0)  # the quiet tenant refilled: 2 tokens
    assert state.paused == {FLOOD}
