"""The OpenAI Agents SDK adapter against the real package (its model a stub, no network) and
the real pipeline: a session publishes what the runner saves, a recall tool brings it back in
another session, pop and clear forget."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Model, ModelResponse, RunConfig, Runner, SQLiteSession, Usage
from agents.items import TResponseInputItem, TResponseOutputItem
from aiokafka import AIOKafkaConsumer
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from memstream.client import AsyncMemstreamProducer, AsyncRecallClient
from memstream.contracts.catalog import load_catalog
from memstream.integrations.openai_agents import MemstreamSession, recall_tool
from memstream.settings import Settings

from .framework_stack import producer_options, wait_for_leaves, wait_forgotten
from .sdk_stack import API_KEY, serving_everything

pytestmark = pytest.mark.integration

NO_NETWORK = RunConfig(tracing_disabled=True)


def _say(text: str) -> ResponseOutputMessage:
    content = [ResponseOutputText(annotations=[], text=text, type="output_text")]
    return ResponseOutputMessage(
        id="msg", content=content, role="assistant", status="completed", type="message"
    )


def _call(tool: str, **arguments: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        arguments=json.dumps(arguments), call_id=f"call-{tool}", name=tool, type="function_call"
    )


class ScriptedModel(Model):
    """Answers each call with the next scripted output, and keeps the inputs it was given."""

    def __init__(self, outputs: list[list[TResponseOutputItem]]) -> None:
        self.outputs = outputs
        self.inputs: list[str | list[TResponseInputItem]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        self.inputs.append(input)
        return ModelResponse(output=self.outputs.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the tests run the agent without streaming")


async def test_a_session_remembers_and_the_recall_tool_recalls_in_another_session(
    settings: Settings, tmp_path: Path
) -> None:
    user = "oa-ann"
    model = ScriptedModel(
        [
            [_say("Congratulations on Miso! How is she settling in?")],
            [_call("recall_memories", query="name of my cat")],
            [_say("Your cat is called Miso.")],
        ]
    )
    async with (
        serving_everything(settings, tmp_path) as stack,
        AsyncRecallClient(stack.url, api_key=API_KEY) as client,
        AsyncMemstreamProducer(stack.settings.broker.bootstrap, **producer_options(stack)) as sent,
    ):
        agent = Agent(name="assistant", model=model, tools=[recall_tool(client, user)])
        first = MemstreamSession("s1", user_id=user, producer=sent, user_name="Ann")
        await Runner.run(
            agent,
            "I adopted a cat last week, she is called Miso.",
            session=first,
            run_config=NO_NETWORK,
        )
        await sent.end_session(user_id=user, session_id="s1")
        leaves = await wait_for_leaves(client, user, {"s1"})

        second = MemstreamSession("s2", user_id=user, producer=sent)
        answer = await Runner.run(
            agent, "What is the name of my cat?", session=second, run_config=NO_NETWORK
        )
        transcript = await second.get_items()
        popped = await second.pop_item()  # the reply: forgotten in memstream as well

        cited = {s for leaf in leaves for s in leaf.source_ids}
        await first.clear_session()
        for message_id in cited:
            await wait_forgotten(client, user, message_id)
        left = await first.get_items()

    tool_output = next(i for i in transcript if i.get("type") == "function_call_output")
    assert "Miso" in str(tool_output["output"])  # recalled from session s1, not from s2
    assert answer.final_output == "Your cat is called Miso."
    assert len(model.inputs) == 3 and "Miso" not in json.dumps(model.inputs[1])
    assert popped is not None and popped.get("role") == "assistant"
    assert len(await second.get_items()) == len(transcript) - 1
    assert len(cited) == 2 and left == []  # both messages of s1 made the exchange


async def _published(settings: Settings, count: int) -> list[dict[str, Any]]:
    """The first `count` values on the turns topic."""
    topic = load_catalog(settings.broker.topic_prefix).turns.name
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=settings.broker.bootstrap, auto_offset_reset="earliest"
    )
    await consumer.start()
    found: list[dict[str, Any]] = []
    try:
        while len(found) < count:
            record = await asyncio.wait_for(consumer.getone(), timeout=60)
            found.append(json.loads(record.value))
    finally:
        await consumer.stop()
    return found


async def test_the_transcript_stays_in_the_underlying_session_and_only_messages_are_sent(
    settings: Settings, tmp_path: Path
) -> None:
    database = tmp_path / "sessions.db"
    options = {"topic_prefix": settings.broker.topic_prefix, "idempotent": False}
    async with AsyncMemstreamProducer(settings.broker.bootstrap, **options) as sent:
        session = MemstreamSession(
            "s1", user_id="oa-bob", producer=sent, underlying_session=SQLiteSession("s1", database)
        )
        await session.add_items(
            [
                {"role": "user", "content": "Hello, I am Bob."},
                {"type": "function_call_output", "call_id": "c1", "output": "42"},
                {"role": "assistant", "content": [{"type": "output_text", "text": "Hi Bob!"}]},
            ]
        )
        reopened = MemstreamSession(  # another process, the same session file
            "s1", user_id="oa-bob", producer=sent, underlying_session=SQLiteSession("s1", database)
        )
        await reopened.add_items([{"role": "user", "content": "I moved to Lyon."}])
        held = await reopened.get_items()
        await reopened.pop_item()
    turns = await _published(settings, 4)

    assert len(held) == 4 and held[1]["type"] == "function_call_output"
    assert [(t["type"], t.get("seq"), t.get("role")) for t in turns] == [
        ("turn.v1", 0, "user"),
        ("turn.v1", 1, "assistant"),  # the tool output takes no seq: it is not sent
        ("turn.v1", 2, "user"),  # numbered after the messages the file already held
        ("forget.v1", None, None),  # the pop forgets what it removes
    ]
    assert turns[3]["message_ids"] == [turns[2]["event_id"]]
    assert turns[1]["text"] == "Hi Bob!"
