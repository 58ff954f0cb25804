"""Which facts a question asks about, and which of their versions come first: plain values."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from memstream.domain.entity_index import EntityIndex, build, read_leaf
from memstream.domain.fact_recall import (
    FACT_SHARE,
    asked_instant,
    asked_slots,
    asked_subjects,
    fact_tokens,
    facts_for_query,
    fit_facts,
    held_before_change,
    validity_phrase,
)
from memstream.domain.fact_timeline import history, timeline_of
from memstream.domain.facts import AtomicFact, kin_key, make_fact, speaker_key
from memstream.domain.models import SourceMessage
from memstream.domain.query import parse_query
from memstream.domain.tokens import count_tokens

JAN_2023 = datetime(2023, 1, 14, tzinfo=UTC)
APR_2023 = datetime(2023, 4, 20, tzinfo=UTC)
APR_2024 = datetime(2024, 4, 9, tzinfo=UTC)
NOW = datetime(2024, 9, 15, tzinfo=UTC)
MAYA = speaker_key("Maya")
BROTHER = kin_key(MAYA, "brother")


def fact(
    subject: str, name: str, attribute: str, value: str, text: str, when: datetime
) -> AtomicFact:
    return make_fact(
        user_id="u1",
        subject=subject,
        subject_name=name,
        attribute=attribute,
        value=value,
        text=text,
        valid_from=when,
        recorded_at=when,
        source_ids=(f"m-{value.lower()}-{when:%Y%m}",),
    )


PORTO = fact(MAYA, "Maya", "lives_in", "Porto", "Maya lives in Porto", JAN_2023)
BERLIN = fact(MAYA, "Maya", "lives_in", "Berlin", "Maya lives in Berlin", APR_2024)
SIEMENS = fact(MAYA, "Maya", "works_at", "Siemens", "Maya works at Siemens", APR_2024)
MADRID = fact(
    BROTHER, "Maya's brother", "lives_in", "Madrid", "Maya's brother lives in Madrid", APR_2023
)
OBSERVED = (PORTO, BERLIN, SIEMENS, MADRID)


def said(text: str, speaker: str = "Maya") -> SourceMessage:
    return SourceMessage(f"m-{hash(text)}", speaker, "user", text, JAN_2023)


def maya_index() -> EntityIndex:
    """Maya speaks; she names her brother Nuno and two cities."""
    leaves = {
        "l1": read_leaf([said("I live in Porto.")]),
        "l2": read_leaf([said("My brother Nuno moved to Madrid.")]),
        "l3": read_leaf([said("We live in Berlin now.")]),
    }
    return build(leaves)


def versions(*observed: AtomicFact) -> dict[tuple[str, str], tuple[AtomicFact, ...]]:
    """Each slot's versions, as `KnowledgeReads.fact_history` gives them."""
    slots = {(f.subject, f.attribute) for f in observed}
    return {
        slot: history(timeline_of(f for f in observed if (f.subject, f.attribute) == slot))
        for slot in slots
    }


def texts(facts: Sequence[AtomicFact]) -> list[str]:
    return [f.text for f in facts]


def test_the_subject_is_whom_the_question_names() -> None:
    index = maya_index()
    assert asked_subjects(parse_query("Where does Maya live?"), index) == (("maya", MAYA),)


def test_someone_named_by_relation_is_the_subject_and_never_the_owner() -> None:
    subjects = asked_subjects(parse_query("Which city does Maya's brother live in?"), maya_index())
    assert len(subjects) == 1  # no tier falls back to Maya
    assert BROTHER in subjects[0] and "maya" not in subjects[0]


def test_a_group_named_by_relation_is_the_subject_and_never_the_owner() -> None:
    subjects = asked_subjects(parse_query("Where do Maya's parents live?"), maya_index())
    assert len(subjects) == 1
    assert "maya" not in subjects[0] and MAYA not in subjects[0]


def test_a_thing_someone_has_falls_back_to_its_owner() -> None:
    subjects = asked_subjects(parse_query("What is Maya's dog called?"), maya_index())
    assert subjects[-1] == ("maya", MAYA)


def test_the_attribute_is_read_from_the_question_words() -> None:
    index = maya_index()
    ask = parse_query
    assert asked_slots(ask("Where does Maya live these days?"), OBSERVED, index) == (
        (MAYA, "lives_in"),
    )
    assert asked_slots(ask("Which city is Maya based in?"), OBSERVED, index) == (
        (MAYA, "lives_in"),
    )
    assert asked_slots(ask("Which company employs Maya now?"), OBSERVED, index) == (
        (MAYA, "works_at"),
    )
    # A word of a value counts too: "Siemens" is only in the works_at slot.
    assert asked_slots(ask("Is Maya still at Siemens?"), OBSERVED, index) == ((MAYA, "works_at"),)
    assert asked_slots(ask("Which city does Maya's brother live in?"), OBSERVED, index) == (
        (BROTHER, "lives_in"),
    )


def test_where_someone_lives_is_not_what_they_do_for_a_living() -> None:
    # "living" stems to "live": read as a word it asked the job slot beside where she lives.
    nurse = fact(MAYA, "Maya", "job", "nurse", "Maya is a nurse", APR_2024)
    observed = (*OBSERVED, nurse)
    index = maya_index()
    assert asked_slots(parse_query("Where does Maya live now?"), observed, index) == (
        (MAYA, "lives_in"),
    )
    assert asked_slots(parse_query("What does Maya do for a living?"), observed, index) == (
        (MAYA, "job"),
    )


def test_a_question_sharing_no_word_with_any_slot_asks_none() -> None:
    assert asked_slots(parse_query("What does Maya think of jazz?"), OBSERVED, maya_index()) == ()
    assert asked_slots(parse_query("Where does Lena live?"), OBSERVED, maya_index()) == ()


def test_a_question_about_now_gets_the_value_true_now_only() -> None:
    query = parse_query("Where does Maya live these days?", NOW)
    found = facts_for_query(query, versions(PORTO, BERLIN), NOW)
    assert texts(found) == ["Maya lives in Berlin"]
    assert found[0].valid_to is None and found[0].supersedes == PORTO.fact_id


def test_a_question_about_now_asked_in_the_past_gets_what_held_then() -> None:
    query = parse_query("Where does Maya live these days?", APR_2023)
    found = facts_for_query(query, versions(PORTO, BERLIN), APR_2023)
    assert texts(found) == ["Maya lives in Porto"]
    # As known today: Porto was closed when Berlin began, and says so.
    assert found[0].valid_to == APR_2024 and found[0].superseded_by == BERLIN.fact_id


def test_a_question_naming_a_past_time_gets_the_value_true_then() -> None:
    query = parse_query("Where was Maya living in the summer of 2023?", NOW)
    assert query.state == "then"
    instant = asked_instant(query, NOW)
    assert datetime(2023, 6, 1, tzinfo=UTC) < instant < datetime(2023, 9, 1, tzinfo=UTC)
    assert texts(facts_for_query(query, versions(PORTO, BERLIN), NOW)) == ["Maya lives in Porto"]


def test_a_question_about_before_gets_what_was_replaced_first_with_its_validity() -> None:
    query = parse_query("Which city did Maya live in before Berlin?", NOW)
    found = facts_for_query(query, versions(PORTO, BERLIN), NOW)
    assert texts(found) == ["Maya lives in Porto", "Maya lives in Berlin"]
    assert found[0].valid_to == APR_2024 and found[0].superseded_by == BERLIN.fact_id


def test_before_a_named_value_comes_first_among_several_replaced() -> None:
    lisbon = fact(
        MAYA, "Maya", "lives_in", "Lisbon", "Maya lives in Lisbon", datetime(2022, 1, 1, tzinfo=UTC)
    )
    history_of = versions(lisbon, PORTO, BERLIN)
    before_porto = parse_query("Where did Maya live before Porto?", NOW)
    assert texts(facts_for_query(before_porto, history_of, NOW))[0] == "Maya lives in Lisbon"
    before_now = parse_query("Where did Maya previously live?", NOW)
    assert texts(facts_for_query(before_now, history_of, NOW))[:2] == [
        "Maya lives in Porto",  # the most recently replaced first
        "Maya lives in Lisbon",
    ]


def test_a_question_about_before_with_nothing_replaced_gets_no_fact() -> None:
    # The value holding now is not an answer to "before": returning it would pose as one.
    query = parse_query("Where did Maya live before Berlin?", NOW)
    assert facts_for_query(query, versions(BERLIN), NOW) == ()


def test_a_question_about_no_state_gets_no_fact() -> None:
    query = parse_query("Where did Maya live?", NOW)
    assert query.state is None
    assert facts_for_query(query, versions(PORTO, BERLIN), NOW) == ()


def test_a_fact_costs_its_sentence_and_its_validity_in_words() -> None:
    porto, berlin = versions(PORTO, BERLIN)[(MAYA, "lives_in")]
    assert validity_phrase(porto) == "14 January 2023 to 9 April 2024"
    assert validity_phrase(berlin) == "since 9 April 2024"
    assert fact_tokens(porto) == count_tokens(
        "Maya lives in Porto (14 January 2023 to 9 April 2024)"
    )


def test_facts_take_at_most_their_share_of_the_budget_in_order() -> None:
    facts = [PORTO, BERLIN, SIEMENS]
    two = fact_tokens(PORTO) + fact_tokens(BERLIN)
    kept, tokens = fit_facts(facts, int(two / FACT_SHARE) + 1)
    assert kept == [PORTO, BERLIN] and tokens == two
    assert fit_facts(facts, 0) == ([], 0)


def test_of_several_values_holding_at_once_those_the_question_names_come_alone() -> None:
    def likes(value: str) -> AtomicFact:
        return fact(MAYA, "Maya", "likes", value, f"Maya likes {value}", JAN_2023)

    history_of = versions(likes("reading"), likes("escaping reality"), likes("jazz"))
    named = parse_query("What does Maya do to escape reality?", NOW)
    assert texts(facts_for_query(named, history_of, NOW)) == ["Maya likes escaping reality"]
    unnamed = parse_query("What does Maya like these days?", NOW)
    assert len(facts_for_query(unnamed, history_of, NOW)) == 3


def test_a_question_in_the_first_person_is_about_the_speakers() -> None:
    index = maya_index()
    assert asked_slots(parse_query("My city these days?"), OBSERVED, index) == ((MAYA, "lives_in"),)
    assert asked_slots(parse_query("Where do I live now?"), OBSERVED, index) == (
        (MAYA, "lives_in"),
    )
    # Not her brother's: he is no speaker. And naming no one, in no person, asks nothing.
    assert asked_slots(parse_query("Where does one live?"), OBSERVED, index) == ()


def test_before_a_change_the_memories_date_the_value_told_before_it_is_the_answer() -> None:
    # Nothing recorded Berlin: the memories date the move (the session first naming it).
    query = parse_query("Where did Maya live before Berlin?", NOW)
    change = APR_2024
    assert texts(held_before_change(query, (PORTO,), change)) == ["Maya lives in Porto"]


def test_before_a_change_a_value_told_on_its_day_or_named_by_the_question_is_no_answer() -> None:
    query = parse_query("Where did Maya live before the move?", NOW)
    # Told the day of the change, though dated weeks before it ("three weeks in Berlin").
    told_with_it = dataclasses.replace(BERLIN, valid_from=APR_2023, recorded_at=APR_2024)
    assert held_before_change(query, (told_with_it,), APR_2024 + timedelta(hours=1)) == ()
    named = parse_query("Where did Maya live before Porto?", NOW)
    assert held_before_change(named, (PORTO,), APR_2024) == ()


def test_who_is_someones_relation_asks_the_owners_slot_of_that_name() -> None:
    # "my flatmate Josh" reads as Tariq's `flatmate`; Tariq's brother's city is no answer.
    tariq = speaker_key("Tariq")
    josh = fact(tariq, "Tariq", "flatmate", "Josh", "Tariq's flatmate is Josh", JAN_2023)
    leeds = fact(kin_key(tariq, "brother"), "Tariq's brother", "lives_in", "Leeds", "", JAN_2023)
    index = build({"l1": read_leaf([said("My flatmate Josh cooks.", "Tariq")])})
    observed = (josh, leeds)
    assert asked_slots(parse_query("Who is Tariq's flatmate?"), observed, index) == (
        (tariq, "flatmate"),
    )
    # Asked of the relation, not who it is: the owner's slot of that name is not asked.
    ask = parse_query("Which city does Tariq's flatmate live in?")
    assert (tariq, "flatmate") not in asked_slots(ask, observed, index)


def test_an_attribute_is_asked_by_the_nouns_extraction_reads_as_it() -> None:
    # "my fiancé", "my wife": the partner slot; "my employer": works_at.
    tom = fact(MAYA, "Maya", "partner", "Tom", "Maya's partner is Tom", JAN_2023)
    index = maya_index()
    assert asked_slots(parse_query("Who is Maya engaged to?"), (tom,), index) == (
        (MAYA, "partner"),
    )
    assert asked_slots(parse_query("Who is Maya's wife?"), (tom,), index) == ((MAYA, "partner"),)
    ask = parse_query("Who is Maya's employer now?")
    assert asked_slots(ask, OBSERVED, index) == ((MAYA, "works_at"),)


def test_who_someone_is_is_the_slot_whose_value_names_them() -> None:
    nuno = fact(MAYA, "Maya", "brother", "Nuno", "Maya's brother is Nuno", APR_2023)
    observed = (*OBSERVED, nuno)
    assert asked_slots(parse_query("Who is Nuno?"), observed, maya_index()) == ((MAYA, "brother"),)
    assert asked_slots(parse_query("Where is Nuno?"), observed, maya_index()) == ()


def test_a_name_right_after_a_relation_is_whom_the_question_asks_about() -> None:
    # "Aino's old flatmate Veera": Veera, not Aino (whose own slots would answer first).
    index = build({"l1": read_leaf([said("My old flatmate Veera stayed in Kallio.", "Aino")])})
    ask = parse_query("Which neighbourhood does Aino's old flatmate Veera live in?")
    assert asked_subjects(ask, index)[0] == ("veera", speaker_key("Veera"))
    # Known to the index or not: a fact may be keyed by the name alone.
    unknown = parse_query("Where does Aino's flatmate Kaisa live?")
    assert asked_subjects(unknown, index)[0] == ("kaisa", speaker_key("Kaisa"))
    # With nothing known of Veera, Aino's own city is no answer.
    aino = fact(speaker_key("Aino"), "Aino", "lives_in", "Töölö", "Aino lives in Töölö", APR_2024)
    assert asked_slots(ask, (aino,), index) == ()


def test_a_speaker_named_by_a_word_the_index_keeps_no_entity_for_is_still_the_subject() -> None:
    """ "Jun" is also a month's abbreviation: the index keeps no entity for it from the text,
    but a speaker is someone talked about whatever their name."""
    jun = speaker_key("Jun")
    kevin = fact(jun, "Jun", "manager", "Kevin", "Jun's manager is Kevin", APR_2024)
    index = build({"l1": read_leaf([said("My new manager is called Kevin.", speaker="Jun")])})
    assert asked_slots(parse_query("Who manages Jun now?"), (kevin, *OBSERVED), index) == (
        (jun, "manager"),
    )
    # A capitalised word naming no speaker asks nobody.
    assert asked_slots(parse_query("Who manages Sales now?"), (kevin, *OBSERVED), index) == ()
