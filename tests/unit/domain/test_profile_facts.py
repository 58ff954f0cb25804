"""A monthly profile's fact lines: what holds at the month's end, what changed in it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from memstream.domain.fact_extraction import extract_facts
from memstream.domain.facts import AtomicFact
from memstream.domain.models import Fact, Level, MemoryNode, SourceMessage, Window
from memstream.domain.profile_facts import (
    CHANGED,
    NOW,
    cites_unsaid,
    is_knowledge_line,
    knowledge_lines,
    offline_profile,
    profile_instant,
    profile_knowledge,
    without_knowledge_lines,
)

JAN = datetime(2024, 1, 10, 9, 0, tzinfo=UTC)
APR = datetime(2024, 4, 2, 18, 30, tzinfo=UTC)


def month(start: datetime) -> Window:
    first = start.replace(day=1, hour=0, minute=0)
    following = (first + timedelta(days=32)).replace(day=1)
    return Window("maya", Level.MONTH, first, following)


def said(event_id: str, text: str, when: datetime, speaker: str = "Maya") -> SourceMessage:
    return SourceMessage(event_id, speaker, "user", text, when)


def facts(*messages: SourceMessage) -> list[AtomicFact]:
    return list(extract_facts(messages, user_id="maya"))


def leaf(*messages: SourceMessage) -> MemoryNode:
    return MemoryNode(
        id="l-" + messages[0].event_id,
        user_id="maya",
        level=Level.SEGMENT,
        t_start=messages[0].ts,
        t_end=messages[-1].ts,
        text=" ".join(m.text for m in messages),
        source_ids=tuple(m.event_id for m in messages),
        messages=messages,
    )


PORTO = said("m1", "I live in Porto, in a little flat by the river.", JAN)
BERLIN = said("m2", "Big news: we moved to Berlin!", APR)
BROTHER = said("m3", "My brother moved to Madrid.", APR + timedelta(hours=1))


def test_the_month_of_a_move_holds_the_new_place_and_says_what_changed() -> None:
    known = profile_knowledge(facts(PORTO, BERLIN, BROTHER), month(APR))
    lines = knowledge_lines(known, month(APR))
    texts = [line.text for line in lines]
    assert texts[0] == f"{CHANGED} Maya moved from Porto to Berlin (2 April 2024)"
    assert lines[0].source_ids == ("m1", "m2")  # both ends of the change are cited
    assert f"{NOW} Maya lives in Berlin (since 2 April 2024)" in texts
    assert not any("lives in Porto" in t for t in texts)  # a replaced value is never current
    # Her brother's move is his, listed after the speaker's own facts.
    assert texts[-1].startswith(f"{NOW} Maya's brother lives in Madrid")


def test_an_earlier_month_states_what_held_then_as_known_then() -> None:
    # Said in April, so the January profile (written, or rebuilt, any time) never shows it.
    known = profile_knowledge(facts(PORTO, BERLIN, BROTHER), month(JAN))
    assert [line.text for line in knowledge_lines(known, month(JAN))] == [
        f"{NOW} Maya lives in Porto (since 10 January 2024)"
    ]
    assert known.changes == ()


def test_a_later_month_keeps_the_current_value_and_names_the_one_it_replaced() -> None:
    may = month(APR + timedelta(days=40))
    known = profile_knowledge(facts(PORTO, BERLIN), may)
    assert known.changes == ()  # the move was April's news
    [line] = knowledge_lines(known, may)
    assert line.text == f"{NOW} Maya lives in Berlin (since 2 April 2024; before: Porto)"
    assert line.source_ids == ("m2",)


def test_the_lines_stop_at_the_budget_changes_first() -> None:
    known = profile_knowledge(facts(PORTO, BERLIN, BROTHER), month(APR))
    everything = knowledge_lines(known, month(APR))
    [first] = knowledge_lines(known, month(APR), budget=20)
    assert first == everything[0]
    assert knowledge_lines(known, month(APR), budget=0) == ()


def test_the_offline_profile_opens_with_the_fact_lines_and_keeps_its_budget() -> None:
    known = profile_knowledge(facts(PORTO, BERLIN, BROTHER), month(APR))
    children = [leaf(BERLIN), leaf(BROTHER)]
    profile = offline_profile(month(APR), children, [], known)
    header, first, *_ = profile.text.split("\n")
    assert header.startswith("Profile as of April 2024")
    assert first == f"- {CHANGED} Maya moved from Porto to Berlin (2 April 2024)"
    assert profile.facts[0].source_ids == ("m1", "m2")
    without = offline_profile(month(APR), children, [], None)
    assert not any(is_knowledge_line(f.text) for f in without.facts)
    assert [f for f in profile.facts if not is_knowledge_line(f.text)] != []


def test_the_next_profile_does_not_carry_the_fact_lines_as_sentences() -> None:
    previous = MemoryNode(
        id="p4",
        user_id="maya",
        level=Level.MONTH,
        t_start=month(APR).start,
        t_end=month(APR).end,
        text="profile",
        facts=(
            Fact(f"{NOW} Maya lives in Berlin (since 2 April 2024)", ("m2",), APR),
            Fact('Maya, places: "I miss the sea." (+2 April 2024)', ("m4",), APR),
        ),
    )
    assert [f.source_ids for f in without_knowledge_lines(previous).facts] == [("m4",)]
    may = month(APR + timedelta(days=40))
    profile = offline_profile(may, [leaf(BROTHER)], [previous], None)
    assert not any(is_knowledge_line(f.text) for f in profile.facts)


def test_a_profile_whose_last_week_runs_past_the_month_states_the_facts_said_in_it() -> None:
    march = month(datetime(2024, 3, 5, tzinfo=UTC))
    moved = said("m5", "We moved to Berlin on Saturday!", datetime(2024, 4, 2, 18, tzinfo=UTC))
    children = [leaf(PORTO), leaf(moved)]  # the week of 1 April is March's last
    until = profile_instant(children)
    assert until == moved.ts
    known = profile_knowledge(facts(PORTO, moved), march, until)
    assert [c.after.value for c in known.changes] == ["Berlin"]
    assert profile_knowledge(facts(PORTO, moved), march).changes == ()


def test_a_profile_citing_a_message_no_fact_comes_from_any_more_is_stale() -> None:
    known = profile_knowledge(facts(PORTO, BERLIN), month(APR))
    profile = offline_profile(month(APR), [leaf(BERLIN)], [], known)
    node = MemoryNode("p", "maya", Level.MONTH, APR, APR, profile.text, facts=profile.facts)
    assert not cites_unsaid(node, facts(PORTO, BERLIN))
    assert cites_unsaid(node, facts(BERLIN))  # Porto's message forgotten: the change line
    assert not cites_unsaid(replace(node, facts=()), [])  # a profile without fact lines


def test_what_someone_told_of_a_speaker_is_replaced_by_what_the_speaker_says() -> None:
    # Jon tells Maya's city by her name; she names the new one herself.
    told = said("m4", "Maya moved to Porto.", JAN, speaker="Jon")
    lines = knowledge_lines(profile_knowledge(facts(told, BERLIN), month(APR)), month(APR))
    texts = [line.text for line in lines]
    assert f"{CHANGED} Maya moved from Porto to Berlin (2 April 2024)" in texts
    assert not any("lives in Porto" in t for t in texts)
