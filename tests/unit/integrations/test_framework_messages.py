"""Which framework messages memstream remembers, and how recall becomes LangChain documents."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from langchain_core.messages import AIMessage, ChatMessage, HumanMessage, SystemMessage, ToolMessage

from memstream.client import Recall
from memstream.integrations.langchain_history import message_role
from memstream.integrations.langchain_retriever import recall_documents
from memstream.integrations.openai_agents import item_message


def test_human_and_ai_messages_are_remembered_and_the_rest_is_not() -> None:
    tool_call = AIMessage("", tool_calls=[{"name": "search", "args": {}, "id": "c1"}])
    assert message_role(HumanMessage("I adopted a cat.")) == "user"
    assert message_role(AIMessage("Congratulations!")) == "assistant"
    assert message_role(ChatMessage("Hi", role="assistant")) == "assistant"
    assert message_role(ChatMessage("Hi", role="critic")) is None
    assert message_role(SystemMessage("You are helpful.")) is None
    assert message_role(ToolMessage("42", tool_call_id="c1")) is None
    assert message_role(tool_call) is None  # a call without words says nothing to remember


def test_agent_items_yield_the_text_of_user_and_assistant_messages_only() -> None:
    reply = {
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "output_text", "text": "Hi"},
            {"type": "refusal", "refusal": "no"},
            {"type": "output_text", "text": "Bob"},
        ],
    }
    assert item_message({"role": "user", "content": "Hello"}) == ("user", "Hello")
    assert item_message(reply) == ("assistant", "Hi\nBob")  # type: ignore[arg-type]
    assert item_message({"role": "system", "content": "Be brief."}) is None
    assert item_message({"role": "user", "content": "  "}) is None
    assert item_message({"type": "function_call_output", "call_id": "c", "output": "4"}) is None


def _memory(**changes: object) -> dict[str, object]:
    return {
        "id": "m1",
        "user_id": "ann",
        "level": 1,
        "level_name": "segment",
        "t_start": "2024-05-01T09:30:00+02:00",
        "t_end": "2024-05-01T09:32:00+02:00",
        "text": "Ann adopted a cat called Miso.",
        "source_ids": ["e1", "e2"],
        "parent_id": "p1",
        "session_id": "s1",
        "version": 1,
        "degraded": False,
        "score": 0.8,
    } | changes


def _fact(**changes: object) -> dict[str, object]:
    return {
        "fact_id": "f1",
        "text": "Ann lives in Berlin",
        "subject": "ann",
        "subject_name": "Ann",
        "attribute": "lives_in",
        "value": "Berlin",
        "certainty": "stated",
        "negated": False,
        "valid_from": "2024-04-01T00:00:00+00:00",
        "valid_to": None,
        "supersedes": "f0",
        "superseded_by": None,
        "recorded_at": "2024-05-01T09:30:00+00:00",
        "source_ids": ["e3"],
    } | changes


def test_recall_becomes_documents_facts_first_with_interval_sources_and_validity() -> None:
    answer = Recall.model_validate(
        {
            "user_id": "ann",
            "complexity": "simple",
            "keywords": ["cat"],
            "tokens": 20,
            "timings_ms": {},
            "degraded": False,
            "facts": [_fact()],
            "memories": [
                _memory(),
                _memory(
                    id="m2",
                    valid_from="2024-04-01T00:00:00+00:00",
                    valid_to=datetime(2024, 6, 1, tzinfo=UTC).isoformat(),
                    superseded_by="m3",
                ),
            ],
        }
    )

    fact, memory, dated = recall_documents(answer)
    without_facts = recall_documents(answer, with_facts=False)

    assert fact.metadata["kind"] == "fact" and fact.page_content == "Ann lives in Berlin"
    assert fact.metadata["holds"] and fact.metadata["supersedes"] == "f0"
    assert fact.metadata["valid_from"] == "2024-04-01T00:00:00+00:00"
    assert memory.id == "m1" and memory.page_content == "Ann adopted a cat called Miso."
    assert json.loads(json.dumps(memory.metadata)) == memory.metadata  # JSON values only
    assert (memory.metadata["level"], memory.metadata["score"]) == (1, 0.8)
    assert memory.metadata["t_start"] == "2024-05-01T09:30:00+02:00"
    assert memory.metadata["source_ids"] == ["e1", "e2"]
    assert "valid_from" not in memory.metadata  # absent when the server does not date it
    assert dated.metadata["valid_to"] == "2024-06-01T00:00:00+00:00"
    assert dated.metadata["superseded_by"] == "m3"
    assert [d.id for d in without_facts] == ["m1", "m2"]


def test_a_fact_told_to_begin_later_is_a_planned_document_not_a_holding_one() -> None:
    answer = Recall.model_validate(
        {
            "user_id": "ann",
            "complexity": "simple",
            "keywords": ["work"],
            "tokens": 20,
            "timings_ms": {},
            "degraded": False,
            "facts": [
                _fact(
                    fact_id="f2",
                    text="Ann works at Tessaly Labs",
                    attribute="works_at",
                    value="Tessaly Labs",
                    valid_from="2026-12-01T00:00:00+00:00",
                    status="planned",
                )
            ],
            "memories": [],
        }
    )

    (planned,) = recall_documents(answer)

    assert planned.metadata["status"] == "planned"
    assert planned.metadata["holds"] is False  # a reader checking holds alone is not misled
