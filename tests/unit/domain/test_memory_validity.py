"""A recalled memory's validity on the asked slots, and the order it sets: plain values."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from memstream.domain.fact_timeline import history, timeline_of
from memstream.domain.facts import AtomicFact, make_fact, speaker_key
from memstream.domain.memory_validity import (
    excludes,
    memory_sources,
    memory_validity,
    stale_below_holding,
    stale_last,
    with_validity,
)
from memstream.domain.models import Fact, Level, MemoryNode
from memstream.domain.ranking import RecalledMemory
from memstream.domain.validity import Validity

JAN_2023 = datetime(2023, 1, 14, tzinfo=UTC)
APR_2024 = datetime(2024, 4, 9, tzinfo=UTC)
NOW = datetime(2024, 9, 15, tzinfo=UTC)
MAYA = speaker_key("Maya")


def lives_in(value: str, when: datetime, source: str) -> AtomicFact:
    return make_fact(
        user_id="u1",
        subject=MAYA,
        subject_name="Maya",
        attribute="lives_in",
        value=value,
        text=f"Maya lives in {value}",
        valid_from=when,
        recorded_at=when,
        source_ids=(source,),
    )


PORTO, BERLIN = history(
    timeline_of([lives_in("Porto", JAN_2023, "m-porto"), lives_in("Berlin", APR_2024, "m-berlin")])
)


def leaf(node_id: str, sources: tuple[str, ...], when: datetime = JAN_2023) -> MemoryNode:
    return MemoryNode(
        id=node_id,
        user_id="u1",
        level=Level.SEGMENT,
        t_start=when,
        t_end=when + timedelta(minutes=5),
        text=node_id,
        source_ids=sources,
    )


def test_a_leaf_stating_a_superseded_value_carries_when_and_by_what_it_was_replaced() -> None:
    assert memory_validity(leaf("porto", ("m-porto", "m-chat")), [PORTO, BERLIN]) == Validity(
        JAN_2023, APR_2024, BERLIN.fact_id, "stated"
    )


def test_a_leaf_stating_the_current_value_holds() -> None:
    validity = memory_validity(leaf("berlin", ("m-berlin",)), [PORTO, BERLIN])
    assert validity == Validity(APR_2024, None, None)
    assert validity is not None and validity.holds_now


def test_a_leaf_stating_both_carries_the_latest_holding() -> None:
    # "We left Porto for Berlin": stale only if all it says on the slot is.
    assert memory_validity(leaf("move", ("m-porto", "m-berlin")), [PORTO, BERLIN]) == Validity(
        APR_2024, None, None
    )


def test_a_memory_stating_no_version_of_the_asked_slots_carries_none() -> None:
    assert memory_validity(leaf("chat", ("m-chat",)), [PORTO, BERLIN]) is None
    assert memory_validity(leaf("porto", ("m-porto",)), []) is None


def test_a_summary_states_the_messages_behind_the_facts_it_keeps() -> None:
    summary = replace(
        leaf("week", ("m-porto", "m-berlin")),
        level=Level.WEEK,
        facts=(Fact("Maya moved to Berlin", ("m-berlin",)),),
    )
    assert memory_sources(summary) == {"m-berlin"}
    assert memory_validity(summary, [PORTO, BERLIN]) == Validity(APR_2024, None, None)
    # With no fact kept (an offline summary of a span), its span's messages.
    assert memory_sources(replace(summary, facts=())) == {"m-porto", "m-berlin"}


def test_a_validity_excludes_the_times_it_did_not_hold() -> None:
    porto = Validity(JAN_2023, APR_2024, BERLIN.fact_id)
    assert excludes(porto, NOW) and excludes(porto, APR_2024)
    assert not excludes(porto, APR_2024 - timedelta(seconds=1))
    assert excludes(Validity(APR_2024), JAN_2023)  # not yet true then
    assert not excludes(None, NOW)


def recalled(
    node_id: str, score: float, sources: tuple[str, ...], level: Level = Level.SEGMENT
) -> RecalledMemory:
    return RecalledMemory(replace(leaf(node_id, sources), level=level), score)


def test_a_stale_memory_never_outranks_one_that_holds() -> None:
    memories = with_validity(
        [
            recalled("porto", 0.9, ("m-porto",)),
            recalled("chat", 0.8, ("m-chat",)),
            recalled("berlin", 0.5, ("m-berlin",)),
        ],
        [PORTO, BERLIN],
    )
    scores = {m.node.id: m.score for m in stale_below_holding(memories, NOW)}
    assert scores["porto"] < scores["berlin"] == 0.5
    assert scores["chat"] == 0.8  # a memory with no validity keeps its score
    # Asked in 2023, Porto held and Berlin had not begun: Berlin is the stale one.
    then = {
        m.node.id: m.score for m in stale_below_holding(memories, JAN_2023 + timedelta(days=30))
    }
    assert then["berlin"] == 0.5 and then["porto"] == 0.9


def test_with_nothing_holding_the_scores_are_kept() -> None:
    memories = with_validity([recalled("porto", 0.9, ("m-porto",))], [PORTO, BERLIN])
    assert stale_below_holding(memories, NOW) == memories


def test_stale_memories_go_last_within_their_level_in_their_own_order() -> None:
    memories = with_validity(
        [
            recalled("porto", 0.9, ("m-porto",)),
            recalled("chat", 0.8, ("m-chat",)),
            recalled("old-week", 0.7, ("m-porto",), Level.WEEK),
            recalled("berlin", 0.5, ("m-berlin",)),
            recalled("porto-2", 0.4, ("m-porto",)),
        ],
        [PORTO, BERLIN],
    )
    assert [m.node.id for m in stale_last(memories, NOW)] == [
        "chat",
        "berlin",
        "porto",
        "porto-2",
        "old-week",
    ]


def test_a_memory_stating_nothing_but_said_before_a_change_holds_until_that_change() -> None:
    mid_2023 = datetime(2023, 7, 1, tzinfo=UTC)
    dec_2022 = datetime(2022, 12, 1, tzinfo=UTC)
    # Said between Porto and Berlin: closed by Berlin, the first change after it.
    assert memory_validity(
        leaf("chat", ("m-chat",), mid_2023), [PORTO, BERLIN], said_before=True
    ) == Validity(None, APR_2024, BERLIN.fact_id, "inferred")
    # Said before the first version: closed by that version.
    assert memory_validity(
        leaf("chat", ("m-chat",), dec_2022), [PORTO, BERLIN], said_before=True
    ) == Validity(None, JAN_2023, PORTO.fact_id, "inferred")
    # Said after the last change: nothing known about it; and without `said_before`, none.
    assert (
        memory_validity(leaf("chat", ("m-chat",), NOW), [PORTO, BERLIN], said_before=True) is None
    )
    assert memory_validity(leaf("chat", ("m-chat",), mid_2023), [PORTO, BERLIN]) is None
    # A memory that states a version keeps that version's validity.
    assert memory_validity(
        leaf("berlin", ("m-berlin",), mid_2023), [PORTO, BERLIN], said_before=True
    ) == Validity(APR_2024, None, None)


def test_over_several_slots_a_memory_is_closed_only_once_every_slot_has_changed() -> None:
    job = replace(PORTO, fact_id="job-1", attribute="job", valid_from=JAN_2023, valid_to=None)
    mid_2023 = datetime(2023, 7, 1, tzinfo=UTC)
    # Berlin changed after the memory; the job did not: the memory may be about the job.
    said = leaf("chat", ("m-chat",), mid_2023)
    assert memory_validity(said, [PORTO, BERLIN, job], said_before=True) is None
    later_job = replace(job, fact_id="job-2", valid_from=NOW - timedelta(days=30))
    assert memory_validity(said, [PORTO, BERLIN, job, later_job], said_before=True) == Validity(
        None, later_job.valid_from, "job-2", "inferred"
    )


def test_before_a_change_is_the_instant_before_the_named_or_latest_version_began() -> None:
    from memstream.domain.lexical import term_set
    from memstream.domain.memory_validity import before_change

    lisbon = replace(
        PORTO, fact_id="lisbon", value="Lisbon", valid_from=JAN_2023 - timedelta(days=400)
    )
    named = before_change([lisbon, PORTO, BERLIN], term_set("where before Porto"), NOW)
    # "before Porto" names a version that replaced another: just before Porto began.
    assert named is not None and named < JAN_2023 and JAN_2023 - named < timedelta(seconds=1)
    # Naming none: just before the version holding now began.
    latest = before_change([PORTO, BERLIN], term_set("where did she live before"), NOW)
    assert latest is not None and latest < APR_2024 and APR_2024 - latest < timedelta(seconds=1)
    assert before_change([], term_set("before"), NOW) is None


def test_a_leaf_naming_a_replaced_value_carries_its_version_whenever_it_was_said() -> None:
    later = NOW - timedelta(days=30)  # said after the change, stating no fact
    packing = replace(leaf("packing", ("m-chat",), later), text="Every box in the Porto flat")
    both = replace(leaf("both", ("m-x",), later), text="Moved from Porto to Berlin")
    none = replace(leaf("none", ("m-y",), later), text="The landlord sent eleven pages")
    versions = [PORTO, BERLIN]
    assert memory_validity(packing, versions, said_before=True) == Validity(
        PORTO.valid_from, APR_2024, BERLIN.fact_id, "inferred"
    )
    # Naming the value that holds too, or no value, it says nothing of its own here.
    assert memory_validity(both, versions, said_before=True) is None
    assert memory_validity(none, versions, said_before=True) is None
    # Only after the fit (said_before): before it, what a leaf names moves nothing.
    assert memory_validity(packing, versions) is None
