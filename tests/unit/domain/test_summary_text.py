"""L2-L5 text without a model: central statements, in time order, within each level's budget."""

from datetime import UTC, datetime, timedelta

import pytest

from memstream.domain.models import Level, MemoryNode, Window
from memstream.domain.summary_text import LEVEL_BUDGETS, consolidate_text
from memstream.domain.tokens import count_tokens

MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


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


def test_session_keeps_central_statements_in_time_order_within_budget() -> None:
    children = l1_children(POTTERY)
    text = consolidate_text(Level.SESSION, window(Level.SESSION, MAY_8, 1), children, [])
    assert text.startswith("Session on 8 May 2023: ")
    assert count_tokens(text) <= LEVEL_BUDGETS[Level.SESSION]
    assert "tax office" not in text  # the one statement unlike the others goes first
    kept = [t for t in POTTERY if t in text]
    assert len(kept) >= 3
    assert kept == [t for t in POTTERY if t in kept]  # time order
    assert "On 8 May 2023," not in text  # the header carries the date once


@pytest.mark.parametrize("level", [Level.SESSION, Level.DAY, Level.WEEK, Level.MONTH])
def test_every_level_honours_its_budget(level: Level) -> None:
    children = l1_children(POTTERY * 6)
    text = consolidate_text(level, window(level, MAY_8, 7), children, [])
    assert 0 < count_tokens(text) <= LEVEL_BUDGETS[level]


def test_a_statement_longer_than_the_budget_is_truncated_not_dropped() -> None:
    children = l1_children(["Melanie said " + "pottery clay " * 200 + "end."])
    text = consolidate_text(Level.SESSION, window(Level.SESSION, MAY_8, 1), children, [])
    assert count_tokens(text) <= LEVEL_BUDGETS[Level.SESSION]
    assert text.startswith("Session on 8 May 2023: Melanie said pottery clay")


def test_a_window_without_children_says_so() -> None:
    text = consolidate_text(Level.DAY, window(Level.DAY, MAY_8, 1), [], [])
    assert text == "Day of 8 May 2023: Nothing was recorded."


def test_week_labels_each_day() -> None:
    monday = datetime(2023, 5, 8, tzinfo=UTC)
    days = [
        node("Day of 8 May 2023: Melanie said they started a pottery class.", Level.DAY, monday),
        node(
            "Day of 10 May 2023: Melanie said the pottery class made a bowl.",
            Level.DAY,
            monday + timedelta(days=2),
        ),
    ]
    text = consolidate_text(Level.WEEK, window(Level.WEEK, monday, 7), days, [])
    assert text == (
        "Week of 8 May 2023: On 8 May, Melanie said they started a pottery class. "
        "On 10 May, Melanie said the pottery class made a bowl."
    )


def test_profile_refines_the_previous_profile() -> None:
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
    text = consolidate_text(Level.MONTH, window(Level.MONTH, may, 31), weeks, [previous])
    assert text.startswith("Profile as of May 2023: Caroline said they love hiking")
    assert "Melanie said they paint landscapes every weekend." in text
    assert "pottery" in text
    assert "April" not in text and "On 8 May" not in text
    assert count_tokens(text) <= LEVEL_BUDGETS[Level.MONTH]


def test_segments_are_not_consolidated() -> None:
    with pytest.raises(ValueError, match="L1"):
        consolidate_text(Level.SEGMENT, window(Level.SEGMENT, MAY_8, 1), [], [])
