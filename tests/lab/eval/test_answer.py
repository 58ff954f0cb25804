"""The answer and judge prompts, and reading the judge's label."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstream.domain.models import Level
from memstream_lab.eval.answer import ContextMemory, answer_prompt, judge_prompt, parse_label

DAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def test_answer_prompt_lists_dated_memories_and_asks_for_a_short_answer() -> None:
    memories = [
        ContextMemory(Level.SEGMENT, DAY, DAY, "Caroline said they went to a support group."),
        ContextMemory(Level.SESSION, DAY, datetime(2023, 5, 9, tzinfo=UTC), "Session summary."),
    ]
    system, user = answer_prompt("When did Caroline go?", memories)
    assert "- [08 May 2023] Caroline said they went to a support group." in user["content"]
    assert "- [08 May 2023 to 09 May 2023] Session summary." in user["content"]
    assert user["content"].endswith("Question: When did Caroline go?\nAnswer:")
    assert "relative" in system["content"] and "six words" in system["content"]


def test_answer_prompt_without_memories_says_so() -> None:
    _, user = answer_prompt("Q?", [])
    assert "no memories were recalled" in user["content"]


def test_judge_prompt_carries_question_gold_and_answer() -> None:
    system, user = judge_prompt("When?", "7 May 2023", "May 7th")
    assert "generous" in system["content"].lower()
    assert user["content"] == "Question: When?\nGold answer: 7 May 2023\nGenerated answer: May 7th"


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ('Same date. {"label": "CORRECT"}', True),
        ('{"label": "WRONG"}', False),
        ('{"label": "correct"}', True),
        ("The answer names the same thing. CORRECT", True),
        ("Different city, so WRONG.", False),
        ("I cannot tell.", None),
        ("CORRECT or WRONG, hard to say", None),
    ],
)
def test_parse_label(reply: str, label: bool | None) -> None:
    assert parse_label(reply) is label
