"""Supersession with history: versions derived from observed facts, in any arrival order."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.domain.fact_timeline import (
    Timeline,
    add,
    at,
    change,
    current,
    forget,
    known_at,
    timeline_of,
    timelines_of,
)
from memstream.domain.facts import AtomicFact, make_fact

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def day(n: int) -> datetime:
    return T0 + timedelta(days=n)


def fact(
    value: str,
    valid: int,
    message: str,
    *,
    recorded: int | None = None,
    attribute: str = "lives_in",
    negated: bool = False,
) -> AtomicFact:
    return make_fact(
        user_id="u1",
        subject="speaker:maya",
        subject_name="Maya",
        attribute=attribute,
        value=value,
        text=f"Maya {attribute} {value}",
        valid_from=day(valid),
        recorded_at=day(valid if recorded is None else recorded),
        source_ids=(message,),
        negated=negated,
    )


def build(*facts: AtomicFact) -> Timeline:
    timeline = Timeline()
    for item in facts:
        timeline = add(timeline, item)
    return timeline


def intervals(timeline: Timeline) -> list[tuple[str, bool, datetime, datetime | None]]:
    return [(v.value, v.negated, v.valid_from, v.valid_to) for v in timeline.versions]


def test_a_newer_value_closes_the_older_and_links_them() -> None:
    porto, berlin = fact("Porto", 0, "m1"), fact("Berlin", 100, "m2")
    timeline = build(porto, berlin)
    old, new = timeline.versions
    assert (old.value, old.valid_to, old.superseded_by) == ("Porto", day(100), berlin.fact_id)
    assert (new.value, new.valid_to, new.supersedes) == ("Berlin", None, porto.fact_id)
    assert [v.value for v in current(timeline)] == ["Berlin"]


def test_a_late_fact_is_placed_in_order_and_closed_by_the_next() -> None:
    timeline = build(fact("Porto", 0, "m1"), fact("Berlin", 100, "m2"))
    late = fact("Lisbon", 50, "m3", recorded=120)
    timeline = add(timeline, late)
    assert [v.value for v in timeline.versions] == ["Porto", "Lisbon", "Berlin"]
    assert timeline.versions[1].valid_to == day(100)
    assert [v.value for v in current(timeline)] == ["Berlin"]


def test_a_restatement_confirms_without_a_new_version() -> None:
    timeline = build(fact("Berlin", 0, "m1"), fact("berlin", 30, "m2"))
    (only,) = timeline.versions
    assert only.source_ids == ("m1", "m2")
    assert only.valid_from == day(0)


def test_a_restatement_of_an_old_value_after_a_change_is_a_new_version() -> None:
    timeline = build(fact("Porto", 0, "m1"), fact("Berlin", 10, "m2"), fact("Porto", 20, "m3"))
    assert [v.value for v in timeline.versions] == ["Porto", "Berlin", "Porto"]


def test_forgetting_a_message_reopens_what_its_fact_closed() -> None:
    timeline = build(fact("Porto", 0, "m1"), fact("Berlin", 100, "m2"))
    reopened = forget(timeline, ["m2"])
    (porto,) = reopened.versions
    assert (porto.value, porto.valid_to, porto.superseded_by) == ("Porto", None, None)


def test_forgetting_one_of_two_confirmations_keeps_the_version() -> None:
    timeline = build(fact("Berlin", 0, "m1"), fact("Berlin", 30, "m2"))
    (kept,) = forget(timeline, ["m1"]).versions
    assert kept.source_ids == ("m2",)
    assert kept.valid_from == day(30)


def test_at_answers_what_was_true_then() -> None:
    timeline = build(fact("Porto", 0, "m1"), fact("Berlin", 100, "m2"))
    assert [v.value for v in at(timeline, day(50))] == ["Porto"]
    assert [v.value for v in at(timeline, day(100))] == ["Berlin"]
    assert at(timeline, day(-1)) == ()


def test_known_at_answers_what_we_believed_then() -> None:
    # Berlin was said on day 100; on day 110 we learn she had moved to Lisbon on day 90.
    timeline = build(fact("Berlin", 100, "m1"), fact("Lisbon", 90, "m2", recorded=110))
    assert [v.value for v in known_at(timeline, day(105))] == ["Berlin"]
    assert [v.value for v in known_at(timeline, day(111))] == ["Berlin"]
    assert [v.value for v in at(timeline, day(95))] == ["Lisbon"]
    assert known_at(timeline, day(50)) == ()


def test_a_negation_ends_the_value_and_leaves_nothing_current() -> None:
    timeline = build(
        fact("Acme", 0, "m1", attribute="works_at"),
        fact("Acme", 40, "m2", attribute="works_at", negated=True),
    )
    assert current(timeline) == ()
    assert [v.value for v in at(timeline, day(20))] == ["Acme"]
    assert timeline.versions[0].valid_to == day(40)


def test_an_ending_replaced_at_the_same_instant_is_no_version_of_its_own() -> None:
    timeline = build(
        fact("Porto", 0, "m1"),
        fact("Porto", 40, "m2", negated=True),
        fact("Berlin", 40, "m2"),
    )
    assert [(v.value, v.negated) for v in timeline.versions] == [
        ("Porto", False),
        ("Berlin", False),
    ]
    assert timeline.versions[0].superseded_by == timeline.versions[1].fact_id


def test_a_negation_of_another_value_does_not_close_the_current_one() -> None:
    timeline = build(fact("Berlin", 0, "m1"), fact("Porto", 10, "m2", negated=True))
    assert [v.value for v in current(timeline)] == ["Berlin"]
    assert len(timeline.versions) == 1


def test_values_of_a_multi_valued_attribute_accumulate() -> None:
    timeline = build(
        fact("painting", 0, "m1", attribute="likes"),
        fact("jazz", 10, "m2", attribute="likes"),
        fact("painting", 20, "m3", attribute="likes", negated=True),
    )
    assert [v.value for v in current(timeline)] == ["jazz"]
    assert sorted(v.value for v in at(timeline, day(15))) == ["jazz", "painting"]


def test_change_lists_the_versions_to_write_and_delete() -> None:
    before = build(fact("Porto", 0, "m1"), fact("Berlin", 100, "m2"))
    after = forget(before, ["m2"])
    diff = change(before, after)
    assert diff.deletes == (before.versions[1].fact_id,)
    assert [(v.value, v.valid_to) for v in diff.upserts] == [("Porto", None)]


def test_facts_of_many_slots_are_grouped_into_their_timelines() -> None:
    home, job = fact("Berlin", 0, "m1"), fact("Acme", 0, "m1", attribute="works_at")
    timelines = timelines_of([home, job, fact("Porto", 9, "m2")])
    assert set(timelines) == {home.slot, job.slot}
    assert [v.value for v in timelines[home.slot].versions] == ["Berlin", "Porto"]


def test_a_timeline_refuses_facts_of_two_slots() -> None:
    try:
        timeline_of([fact("Berlin", 0, "m1"), fact("Acme", 0, "m2", attribute="works_at")])
    except ValueError:
        return
    raise AssertionError("two slots were accepted")


# ---- properties ------------------------------------------------------------------------

VALUES = st.sampled_from(["Porto", "Berlin", "Lisbon", "berlin"])


def observations(attribute: str = "lives_in") -> st.SearchStrategy[list[AtomicFact]]:
    return st.lists(
        st.builds(
            lambda value, valid, delay, negated, n: fact(
                value, valid, f"m{n}", recorded=valid + delay, negated=negated, attribute=attribute
            ),
            VALUES,
            st.integers(0, 30),
            st.integers(0, 30),
            st.booleans(),
            st.integers(0, 40),
        ),
        max_size=8,
    )


OBSERVATIONS = observations()
ANY_SLOT = st.sampled_from(["lives_in", "likes"]).flatmap(observations)


@settings(max_examples=200, deadline=None)
@given(ANY_SLOT, st.randoms(use_true_random=False))
def test_arrival_order_does_not_change_the_versions(facts: list[AtomicFact], rng: object) -> None:
    shuffled = list(facts)
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    assert build(*facts).versions == build(*shuffled).versions


@settings(max_examples=200, deadline=None)
@given(ANY_SLOT)
def test_replaying_a_fact_changes_nothing(facts: list[AtomicFact]) -> None:
    timeline = build(*facts)
    for item in facts:
        assert add(timeline, item) == timeline


@settings(max_examples=200, deadline=None)
@given(OBSERVATIONS, VALUES, st.integers(0, 30), st.booleans())
def test_forgetting_an_added_fact_restores_the_timeline(
    facts: list[AtomicFact], value: str, valid: int, negated: bool
) -> None:
    timeline = build(*facts)
    new = fact(value, valid, "fresh-message", negated=negated)
    assert forget(add(timeline, new), ["fresh-message"]) == timeline


@settings(max_examples=200, deadline=None)
@given(OBSERVATIONS)
def test_single_valued_intervals_neither_overlap_nor_leave_gaps(
    facts: list[AtomicFact],
) -> None:
    versions = build(*facts).versions
    for older, newer in itertools.pairwise(versions):
        assert older.valid_to == newer.valid_from
        assert older.valid_from <= newer.valid_from
    if versions:
        assert versions[-1].valid_to is None
    for when in range(0, 32):
        assert len(at(build(*facts), day(when))) <= 1


@settings(max_examples=200, deadline=None)
@given(OBSERVATIONS)
def test_supersession_is_never_circular(facts: list[AtomicFact]) -> None:
    versions = {v.fact_id: v for v in build(*facts).versions}
    for start in versions.values():
        seen = {start.fact_id}
        step = start
        while step.superseded_by is not None:
            step = versions[step.superseded_by]
            assert step.fact_id not in seen
            assert versions[step.supersedes or ""].fact_id in seen
            seen.add(step.fact_id)


@settings(max_examples=200, deadline=None)
@given(ANY_SLOT)
def test_what_we_know_after_every_message_is_what_is_current(facts: list[AtomicFact]) -> None:
    timeline = build(*facts)
    assert known_at(timeline, day(1000)) == current(timeline)


@settings(max_examples=200, deadline=None)
@given(observations("likes"))
def test_multi_valued_values_have_their_own_gapless_chains(facts: list[AtomicFact]) -> None:
    versions = build(*facts).versions
    for key in {v.value_key for v in versions}:
        chain = [v for v in versions if v.value_key == key]
        for older, newer in itertools.pairwise(chain):
            assert older.valid_to == newer.valid_from
            assert older.superseded_by == newer.fact_id
        assert chain[-1].valid_to is None
