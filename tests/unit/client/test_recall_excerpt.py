"""An answer says when a memory is an excerpt, and when the budget left memories out."""

from __future__ import annotations

from typing import Any

from memstream.client.models import Recall


def answer(**extra: Any) -> Recall:
    memory = {
        "id": "L1-a",
        "user_id": "u1",
        "level": 1,
        "level_name": "exchange",
        "t_start": "2024-10-19T09:30:00Z",
        "t_end": "2024-10-19T09:30:00Z",
        "text": '19 October 2024, Dana: "…My bike lock combination is 3907."',
        "source_ids": ["m0"],
        "parent_id": None,
        "session_id": "s1",
        "version": 1,
        "degraded": False,
        "excerpt": True,
        "full_tokens": 512,
    }
    body = {
        "user_id": "u1",
        "complexity": "simple",
        "keywords": ["bike"],
        "memories": [memory],
        "tokens": 20,
        "timings_ms": {},
        "degraded": False,
    }
    return Recall.model_validate(body | extra)


def test_an_excerpt_says_so_with_the_whole_size() -> None:
    recalled = answer()
    assert recalled.memories[0].excerpt and recalled.memories[0].full_tokens == 512
    assert '3907." (an excerpt: the whole memory is 512 tokens)' in recalled.as_prompt()
    assert "did not fit" not in recalled.as_prompt()


def test_memories_left_out_for_the_budget_are_counted_in_the_prompt() -> None:
    recalled = answer(omitted_for_budget=3)
    assert recalled.as_prompt().endswith("(3 more relevant memories did not fit the token budget.)")


def test_an_older_server_without_the_fields_reads_as_whole_memories() -> None:
    body = answer().model_dump()
    for memory in body["memories"]:
        del memory["excerpt"], memory["full_tokens"]
    recalled = Recall.model_validate(body)
    assert not recalled.memories[0].excerpt and recalled.omitted_for_budget == 0
