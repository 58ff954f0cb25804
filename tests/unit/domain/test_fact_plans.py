"""A change told as scheduled ("I'm joining Wipro next month"): read, begun at its time ahead,
not current before it, current after it, and served as planned in between."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstream.client.models import Fact as ClientFact
from memstream.client.prompt import render_recall
from memstream.domain.fact_extraction import extract_facts
from memstream.domain.fact_recall import facts_for_query, validity_phrase
from memstream.domain.fact_time import starts_at
from memstream.domain.fact_timeline import begun_by, planned
from memstream.domain.facts import AtomicFact, status_at
from memstream.domain.knowledge import current_facts, fact_history
from memstream.domain.models import SourceMessage
from memstream.domain.query import parse_query
from memstream.edges.http.fact_schema import Fact as ServedFact

# A Tuesday in mid-January.
SAID = datetime(2027, 1, 12, 10, 0, tzinfo=UTC)
EARLIER = datetime(2026, 9, 1, 9, 0, tzinfo=UTC)


def said(text: str, at: datetime = SAID, event_id: str = "m2") -> SourceMessage:
    return SourceMessage(event_id, "Dev", "user", text, at)


def read(text: str) -> set[tuple[str, str, datetime]]:
    return {(f.attribute, f.value, f.valid_from) for f in extract_facts([said(text)], user_id="u")}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm joining Wipro as a tech lead next month.",
         ("works_at", "Wipro", datetime(2027, 2, 1, tzinfo=UTC))),
        ("We move to Leeds in March.", ("lives_in", "Leeds", datetime(2027, 3, 1, tzinfo=UTC))),
        ("Next month we're moving to Leeds.",
         ("lives_in", "Leeds", datetime(2027, 2, 1, tzinfo=UTC))),
        ("I start my new job at Ocado on Monday.",
         ("works_at", "Ocado", datetime(2027, 1, 18, tzinfo=UTC))),
        ("I'll be working at Harbour Dental in two weeks.",
         ("works_at", "Harbour Dental", datetime(2027, 1, 26, tzinfo=UTC))),
    ],
)  # fmt: skip
def test_a_change_told_as_scheduled_begins_at_the_time_ahead(
    text: str, expected: tuple[str, str, datetime]
) -> None:
    assert expected in read(text)


@pytest.mark.parametrize(
    "text",
    [
        "I'm going to move to Leeds next month.",  # a plan still weighed
        "I start work at nine.",  # a habit: no time ahead
        "Are you moving to Leeds in March?",
    ],
)
def test_a_plan_a_habit_or_a_question_states_no_change(text: str) -> None:
    assert not {fact for fact in read(text) if fact[0] == "lives_in"}
    assert not {fact for fact in read(text) if fact[0] == "works_at"}


def test_only_the_clause_told_ahead_begins_ahead() -> None:
    found = read("I left Infosys last week and I'm joining Wipro as a tech lead next month.")
    assert ("works_at", "Wipro", datetime(2027, 2, 1, tzinfo=UTC)) in found
    assert all(start <= SAID for _, value, start in found if value == "Infosys")


@pytest.mark.parametrize(
    ("phrase", "begins"),
    [
        ("at the end of next month", datetime(2027, 2, 22, tzinfo=UTC)),  # its last quarter
        ("late next month", datetime(2027, 2, 22, tzinfo=UTC)),
        ("early next month", datetime(2027, 2, 1, tzinfo=UTC)),
        ("in mid-March", datetime(2027, 3, 16, tzinfo=UTC)),
        ("from the middle of March", datetime(2027, 3, 16, tzinfo=UTC)),
        ("at the end of March", datetime(2027, 3, 24, tzinfo=UTC)),
        ("at the end of the month", datetime(2027, 1, 24, tzinfo=UTC)),
        ("towards the end of next year", datetime(2028, 10, 1, tzinfo=UTC)),
        ("next week", datetime(2027, 1, 18, tzinfo=UTC)),  # the calendar's: a Monday
    ],
)  # fmt: skip
def test_a_part_of_a_span_ahead_begins_where_that_part_does(phrase: str, begins: datetime) -> None:
    assert starts_at(f"we move to Leeds {phrase}", SAID) == begins


def test_a_part_already_begun_begins_the_next_day_and_a_start_of_this_span_reads_nothing() -> None:
    late_in_november = datetime(2026, 11, 30, 10, tzinfo=UTC)
    assert starts_at("at the end of the year", late_in_november) == datetime(
        2026, 12, 1, tzinfo=UTC
    )
    assert starts_at("at the end of the month", late_in_november) is None  # no day left
    assert starts_at("at the start of the month", SAID) is None  # this one's or the next's?


def test_a_month_named_ahead_is_the_next_one_to_come() -> None:
    assert starts_at("in March", SAID) == datetime(2027, 3, 1, tzinfo=UTC)
    assert starts_at("in January", datetime(2027, 6, 1, tzinfo=UTC)) == datetime(
        2028, 1, 1, tzinfo=UTC
    )
    assert starts_at("in January", SAID) is None  # said in January: no time ahead
    assert starts_at("last month", SAID) is None


def facts_told() -> tuple[AtomicFact, ...]:
    return extract_facts(
        [
            said("I work at Infosys.", EARLIER, "m1"),
            said("I'm joining Wipro as a tech lead next month."),
        ],
        user_id="u",
    )


def test_the_old_value_holds_until_the_new_one_begins_and_no_longer() -> None:
    told = facts_told()
    old, new = fact_history(told, "speaker:dev", "works_at")
    start = datetime(2027, 2, 1, tzinfo=UTC)
    assert (old.value, old.valid_to) == ("Infosys", start)
    assert (new.value, new.valid_from) == ("Wipro", start)
    before = datetime(2027, 1, 20, tzinfo=UTC)
    assert [f.value for f in current_facts(told, when=before)] == ["Infosys"]
    assert [f.value for f in current_facts(told, when=datetime(2027, 3, 1, tzinfo=UTC))] == [
        "Wipro"
    ]
    # Now, between the telling and the start: the old value holds, the new one is planned.
    now = current_facts(told, now=before)
    assert [(f.value, status_at(f, before)) for f in now] == [
        ("Infosys", "holds"),
        ("Wipro", "planned"),
    ]


def test_recall_about_now_gives_what_holds_then_what_is_planned() -> None:
    history = fact_history(facts_told(), "speaker:dev", "works_at")
    query = parse_query("Where does Dev work?", SAID)
    between = facts_for_query(query, {("speaker:dev", "works_at"): history}, SAID)
    assert [f.value for f in between] == ["Infosys", "Wipro"]
    later = datetime(2027, 3, 1, tzinfo=UTC)
    after = facts_for_query(
        parse_query("Where does Dev work?", later), {("speaker:dev", "works_at"): history}, later
    )
    assert [f.value for f in after] == ["Wipro"]
    assert validity_phrase(history[-1]) == "from 1 February 2027"


def test_as_prompt_says_what_holds_until_when_and_what_is_planned() -> None:
    history = fact_history(facts_told(), "speaker:dev", "works_at")
    served = [
        ClientFact.model_validate(ServedFact.of(f, SAID).model_dump(mode="json")) for f in history
    ]
    assert render_recall(served, [], "Known:").splitlines() == [
        "Known:",
        "- Dev works at Infosys (since Sep 2026; until 1 Feb 2027)",
        "- Planned from 1 Feb 2027: Dev works at Wipro (until then: Infosys)",
    ]


def test_only_a_change_told_ahead_is_planned_not_one_learned_later() -> None:
    told = extract_facts(
        [said("I work at Infosys.", EARLIER, "m1"), said("I work at Wipro now.")], user_id="u"
    )
    history = fact_history(told, "speaker:dev", "works_at")
    asked = datetime(2026, 10, 1, tzinfo=UTC)  # after Infosys was told, before Wipro was
    assert begun_by(history, asked) == history  # as known today: Wipro is no plan
    assert planned(history, asked) == ()
    ahead = fact_history(facts_told(), "speaker:dev", "works_at")
    assert [(v.value, v.valid_to) for v in begun_by(ahead, SAID)] == [("Infosys", None)]


def test_a_question_about_a_month_ahead_is_asked_then() -> None:
    history = fact_history(facts_told(), "speaker:dev", "works_at")
    query = parse_query("Where will Dev work in March?", SAID)
    assert [
        f.value for f in facts_for_query(query, {("speaker:dev", "works_at"): history}, SAID)
    ] == ["Wipro"]
