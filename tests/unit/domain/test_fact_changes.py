"""What a commit's knowledge changes in the fact versions: what the change feed announces."""

from __future__ import annotations

from datetime import UTC, datetime

from memstream.domain.fact_changes import Reopened, fact_changes, touches_facts
from memstream.domain.facts import AtomicFact, make_fact
from memstream.domain.knowledge import KnowledgeChange, LeafKnowledge

MARCH, MAY = datetime(2024, 3, 1, tzinfo=UTC), datetime(2024, 5, 1, tzinfo=UTC)


def lives_in(city: str, when: datetime, message: str) -> AtomicFact:
    return make_fact(
        user_id="ann",
        subject="kin:ann:sister",
        subject_name="Ann's sister",
        attribute="lives_in",
        value=city,
        text=f"Ann's sister lives in {city}",
        valid_from=when,
        recorded_at=when,
        source_ids=(message,),
    )


PORTO, BERLIN = lives_in("Porto", MARCH, "m1"), lives_in("Berlin", MAY, "m2")
LIKES = make_fact(
    user_id="ann",
    subject="speaker:ann",
    subject_name="Ann",
    attribute="likes",
    value="jazz",
    text="Ann likes jazz",
    valid_from=MARCH,
    recorded_at=MARCH,
    source_ids=("m3",),
)


def written(**leaves: tuple[AtomicFact, ...]) -> KnowledgeChange:
    """L1s written for the first time, saying these facts."""
    return KnowledgeChange(
        leaves={leaf: LeafKnowledge(facts) for leaf, facts in leaves.items()},
        first_written=frozenset(leaves),
    )


def test_a_newer_value_closes_the_one_that_held() -> None:
    changes = fact_changes({"l1": (PORTO,)}, written(l2=(BERLIN,)))
    by_value = {v.value: v for v in changes.written}
    assert set(by_value) == {"Porto", "Berlin"} and changes.removed == ()
    [closed] = changes.superseded
    assert (closed.value, closed.superseded_by) == ("Porto", BERLIN.fact_id)
    assert closed.valid_to == MAY and by_value["Berlin"].is_current
    assert changes.reopened == ()


def test_forgetting_the_newer_value_reopens_the_older_and_removes_it() -> None:
    stored = {"l1": (PORTO,), "l2": (BERLIN,)}
    changes = fact_changes(stored, KnowledgeChange(dropped=("l2",)))
    assert changes.removed == (BERLIN.fact_id,)
    [porto] = changes.written
    assert porto.is_current and porto.superseded_by is None
    assert changes.reopened == (Reopened(porto, BERLIN.fact_id),)
    assert changes.superseded == ()


def test_a_leaf_written_again_with_the_same_facts_changes_nothing() -> None:
    stored = {"l1": (PORTO,), "l2": (BERLIN,), "l3": (LIKES,)}
    again = KnowledgeChange(leaves={"l2": LeafKnowledge((BERLIN,))})
    assert touches_facts(again) and fact_changes(stored, again).empty


def test_only_the_slots_the_commit_touches_are_compared() -> None:
    changes = fact_changes({"l3": (LIKES,)}, written(l1=(PORTO,)))
    assert [v.value for v in changes.written] == ["Porto"]


def test_a_first_write_that_says_no_fact_needs_no_read() -> None:
    assert not touches_facts(written(l1=()))
    assert touches_facts(written(l1=(PORTO,)))
    assert touches_facts(KnowledgeChange(leaves={"l1": LeafKnowledge()}))  # written again
    assert touches_facts(KnowledgeChange(dropped=("l1",)))
