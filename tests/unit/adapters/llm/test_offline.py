import re
from datetime import UTC, datetime, timedelta

import pytest

from memstream.adapters.llm.offline import (
    LEVEL_BUDGETS,
    OfflineLanguageModel,
    count_tokens,
    third_person,
)
from memstream.domain.lexical import tokenize
from memstream.domain.models import Level, MemoryNode, Turn, Window

MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
llm = OfflineLanguageModel()


def turn(speaker: str, text: str, seq: int = 0, ts: datetime = MAY_8, **extra: object) -> Turn:
    return Turn(
        event_id=f"e{seq}",
        user_id="u1",
        session_id="s1",
        seq=seq,
        speaker=speaker,
        role="user",
        text=text,
        ts=ts + timedelta(minutes=seq),
        **extra,  # type: ignore[arg-type]
    )


def node(text: str, level: Level, start: datetime, hours: float = 1.0, id_: str = "") -> MemoryNode:
    return MemoryNode(
        id=id_ or f"n-{start.isoformat()}-{len(text)}",
        user_id="u1",
        level=level,
        t_start=start,
        t_end=start + timedelta(hours=hours),
        text=text,
    )


def window(level: Level, start: datetime, days: int) -> Window:
    return Window(user_id="u1", level=level, start=start, end=start + timedelta(days=days))


EXCHANGE = [
    turn("Caroline", "I went to a LGBTQ support group yesterday and it was so powerful.", 0),
    turn("Melanie", "Wow! Do you want to go again? I think you deserve it, my friend.", 1),
]


async def test_segment_is_third_person_with_the_date() -> None:
    summary = await llm.write_segment(EXCHANGE, [])
    assert summary.text == (
        "On 8 May 2023, Caroline said they went to a LGBTQ support group yesterday and it was "
        "so powerful. Melanie said wow! Does Caroline want to go again? They think Caroline "
        "deserves it, their friend."
    )
    assert not summary.degraded
    assert not re.search(r"\b(I|me|my|I'm)\b", summary.text)


async def test_segment_is_deterministic_and_keeps_every_content_word() -> None:
    first = await llm.write_segment(EXCHANGE, [])
    second = await llm.write_segment(EXCHANGE, [])
    assert first == second
    original = {t for m in EXCHANGE for t in tokenize(m.text)}
    assert original <= set(tokenize(first.text))


async def test_segment_date_is_the_users_local_date_and_captions_are_kept() -> None:
    late = datetime(2023, 5, 8, 23, 30, tzinfo=UTC)
    messages = [
        turn(
            "Melanie",
            "Look at this!",
            ts=late,
            tz="Asia/Tokyo",
            metadata={"blip_caption": "a bowl"},
        )
    ]
    text = (await llm.write_segment(messages, [])).text
    assert text == "On 9 May 2023, Melanie said look at this! Melanie shared a photo of a bowl."


def test_third_person_fixes_verbs_around_the_rewritten_pronouns() -> None:
    assert third_person("I am tired, are you?", "Mel") == "They are tired, is Mel?"
    assert (
        third_person("You were right and I was wrong.", "Mel")
        == "Mel was right and they were wrong."
    )
    # Without a single addressee, "you" stays as written.
    assert third_person("Thank you!", None) == "Thank you!"


POTTERY = [
    "Melanie said the pottery class taught them to center clay on the wheel.",
    "Caroline said pottery sounds relaxing and asked what Melanie made in class.",
    "Melanie said they made a clay bowl in pottery class and glazed it blue.",
    "Melanie said the pottery teacher showed the class how to trim a clay bowl.",
    "Caroline said they want to join the pottery class and make a clay mug too.",
    "Melanie said the class fires every clay piece in the pottery kiln on Fridays.",
    "Melanie said their kids love the pottery class and the wet clay on their hands.",
    "Caroline said the tax office lost the forms for the quarterly return yesterday morning.",
    "Caroline said pottery class photos made them smile and they want a clay vase.",
]


def l1_children(texts: list[str], start: datetime = MAY_8) -> list[MemoryNode]:
    return [
        node(f"On 8 May 2023, {t}", Level.SEGMENT, start + timedelta(minutes=i), 0.01)
        for i, t in enumerate(texts)
    ]


async def test_session_keeps_central_statements_in_time_order_within_budget() -> None:
    children = l1_children(POTTERY)
    text = (
        await llm.consolidate(Level.SESSION, window(Level.SESSION, MAY_8, 1), children, [])
    ).text
    assert text.startswith("Session on 8 May 2023: ")
    assert count_tokens(text) <= LEVEL_BUDGETS[Level.SESSION]
    assert "tax office" not in text  # the one statement unlike the others goes first
    kept = [t for t in POTTERY if t in text]
    assert len(kept) >= 3
    assert kept == [t for t in POTTERY if t in kept]  # time order
    assert "On 8 May 2023," not in text  # the header carries the date once


@pytest.mark.parametrize("level", [Level.SESSION, Level.DAY, Level.WEEK, Level.MONTH])
async def test_every_level_honours_its_budget(level: Level) -> None:
    children = l1_children(POTTERY * 6)
    text = (await llm.consolidate(level, window(level, MAY_8, 7), children, [])).text
    assert 0 < count_tokens(text) <= LEVEL_BUDGETS[level]


async def test_a_statement_longer_than_the_budget_is_truncated_not_dropped() -> None:
    children = l1_children(["Melanie said " + "pottery clay " * 200 + "end."])
    text = (
        await llm.consolidate(Level.SESSION, window(Level.SESSION, MAY_8, 1), children, [])
    ).text
    assert count_tokens(text) <= LEVEL_BUDGETS[Level.SESSION]
    assert text.startswith("Session on 8 May 2023: Melanie said pottery clay")


async def test_week_labels_each_day() -> None:
    monday = datetime(2023, 5, 8, tzinfo=UTC)
    days = [
        node("Day of 8 May 2023: Melanie said they started a pottery class.", Level.DAY, monday),
        node(
            "Day of 10 May 2023: Melanie said the pottery class made a bowl.",
            Level.DAY,
            monday + timedelta(days=2),
        ),
    ]
    text = (await llm.consolidate(Level.WEEK, window(Level.WEEK, monday, 7), days, [])).text
    assert text == (
        "Week of 8 May 2023: On 8 May, Melanie said they started a pottery class. "
        "On 10 May, Melanie said the pottery class made a bowl."
    )


async def test_profile_refines_the_previous_profile() -> None:
    may = datetime(2023, 5, 1, tzinfo=UTC)
    previous = node(
        "Profile as of April 2023: Caroline said they love hiking in the mountains. "
        "Melanie said they paint landscapes every weekend.",
        Level.MONTH,
        datetime(2023, 4, 1, tzinfo=UTC),
        hours=24 * 30,
    )
    weeks = [
        node(
            "Week of 8 May 2023: On 8 May, " + " ".join(POTTERY[:4]),
            Level.WEEK,
            datetime(2023, 5, 8, tzinfo=UTC),
            hours=24 * 7,
        )
    ]
    text = (
        await llm.consolidate(Level.MONTH, window(Level.MONTH, may, 31), weeks, [previous])
    ).text
    assert text.startswith("Profile as of May 2023: Caroline said they love hiking")
    assert "Melanie said they paint landscapes every weekend." in text
    assert "pottery" in text
    assert "April" not in text and "On 8 May" not in text
    assert count_tokens(text) <= LEVEL_BUDGETS[Level.MONTH]


@pytest.mark.parametrize(
    ("query", "complexity"),
    [
        ("What did Caroline research?", "simple"),
        ("When did Caroline go to the LGBTQ support group?", "hybrid"),
        ("How often does Melanie go camping?", "hybrid"),
        ("What do Melanie and Caroline both enjoy?", "hybrid"),
        ("Why did Caroline choose adoption?", "complex"),
        ("Would Caroline likely pursue writing as a career?", "complex"),
        ("What kind of art does Melanie make?", "complex"),
    ],
)
async def test_plan_complexity(query: str, complexity: str) -> None:
    assert (await llm.plan(query)).complexity == complexity


async def test_plan_keywords_are_content_words_with_names_kept() -> None:
    plan = await llm.plan("What did Caroline paint at the LGBTQ center last week?")
    assert plan.keywords == ("Caroline", "paint", "LGBTQ", "center", "last", "week")
    assert not plan.degraded


async def test_gate_keeps_matching_candidates_and_the_profile() -> None:
    start = MAY_8
    pottery = node("Melanie said Caroline liked the pottery bowl.", Level.SEGMENT, start, id_="a")
    hiking = node("Melanie said Caroline went hiking.", Level.SEGMENT, start, id_="b")
    taxes = node("Melanie said Caroline filed taxes.", Level.SEGMENT, start, id_="c")
    profile = node("Profile as of May 2023: Caroline loves art.", Level.MONTH, start, id_="p")
    candidates = [pottery, hiking, taxes, profile]
    # "Caroline" is in every candidate, so it cannot decide anything: "pottery" does.
    assert await llm.gate("What pottery did Caroline like?", "simple", candidates) == ["a", "p"]
    # Nothing matches: the rule has no evidence, so it keeps everything.
    assert await llm.gate("Which car is red?", "hybrid", candidates) == ["a", "b", "c", "p"]
    # Complex questions favour recall.
    assert await llm.gate("Why pottery?", "complex", candidates) == ["a", "b", "c", "p"]


async def test_segments_are_not_consolidated() -> None:
    with pytest.raises(ValueError, match="L1"):
        await llm.consolidate(Level.SEGMENT, window(Level.SEGMENT, MAY_8, 1), [], [])
