"""The LangChain and LangGraph adapters against the real packages and the real pipeline:
a history publishes, the retriever recalls, clear() forgets, a LangGraph agent remembers
across threads."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from memstream.client import (
    AsyncMemstreamProducer,
    AsyncRecallClient,
    MemstreamProducer,
    RecallClient,
)
from memstream.integrations.langchain_history import MemstreamChatMessageHistory
from memstream.integrations.langchain_retriever import MemstreamRetriever
from memstream.integrations.langgraph_agent import build_memory_agent
from memstream.settings import Settings

from .framework_stack import producer_options, wait_for_leaves, wait_forgotten
from .sdk_stack import API_KEY, serving_everything

pytestmark = pytest.mark.integration


async def test_history_publishes_retriever_recalls_and_clear_forgets(
    settings: Settings, tmp_path: Path
) -> None:
    user = "lc-ann"
    said = HumanMessage("I adopted a cat last week, she is called Miso.", id=str(uuid.uuid4()))
    replied = AIMessage("Congratulations on Miso! How is she settling in?")
    question = "What is the name of Ann's cat?"
    async with (
        serving_everything(settings, tmp_path) as stack,
        AsyncRecallClient(stack.url, api_key=API_KEY) as client,
        AsyncMemstreamProducer(
            stack.settings.broker.bootstrap, **producer_options(stack)
        ) as async_producer,
    ):
        producer = MemstreamProducer(stack.settings.broker.bootstrap, **producer_options(stack))
        history = MemstreamChatMessageHistory(
            "s1", user_id=user, producer=producer, user_name="Ann", assistant_name="Bot"
        )
        system = SystemMessage("You are a helpful assistant.")
        await asyncio.to_thread(history.add_messages, [system, said, replied])
        await asyncio.to_thread(producer.end_session, user_id=user, session_id="s1")
        second = MemstreamChatMessageHistory(
            "s2", user_id=user, async_producer=async_producer, user_name="Ann"
        )
        await second.aadd_messages([HumanMessage("My sister Lena visits me in Porto in June.")])
        await async_producer.end_session(user_id=user, session_id="s2")
        await wait_for_leaves(client, user, {"s1", "s2"})

        with RecallClient(stack.url, api_key=API_KEY) as sync_client:
            retriever = MemstreamRetriever(user_id=user, client=sync_client)
            sync_docs = await asyncio.to_thread(retriever.invoke, question)
            threaded_docs = await retriever.ainvoke(question)  # no async client: a thread
        retriever = MemstreamRetriever(user_id=user, async_client=client)
        docs = await retriever.ainvoke(question)

        await asyncio.to_thread(history.clear)
        await wait_forgotten(client, user, str(said.id))
        after = await retriever.ainvoke(question)
        await asyncio.to_thread(producer.close)

    assert history.messages == [] and len(await second.aget_messages()) == 1
    contents = [d.page_content for d in docs]
    assert contents == [d.page_content for d in sync_docs]
    assert contents == [d.page_content for d in threaded_docs]
    leaves = [d for d in docs if d.metadata["kind"] == "memory" and d.metadata["level"] == 1]
    cat = next(d for d in leaves if said.id in d.metadata["source_ids"])
    assert "Miso" in cat.page_content
    assert cat.id == cat.metadata["id"] and cat.metadata["session_id"] == "s1"
    assert cat.metadata["level_name"] and isinstance(cat.metadata["score"], float)
    assert cat.metadata["t_start"] <= cat.metadata["t_end"]  # ISO strings of one offset
    assert not any(said.id in d.metadata["source_ids"] for d in after)
    assert any("Lena" in d.page_content for d in after)  # the other session is kept


class _Prompts(BaseCallbackHandler):
    """The messages each chat-model call was given."""

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.calls.extend(messages)


async def test_a_langgraph_agent_remembers_across_threads(
    settings: Settings, tmp_path: Path
) -> None:
    user = "lg-ann"
    model = FakeMessagesListChatModel(
        responses=[AIMessage("Miso is a lovely name."), AIMessage("Your cat is called Miso.")]
    )
    prompts = _Prompts()
    async with (
        serving_everything(settings, tmp_path) as stack,
        AsyncMemstreamProducer(
            stack.settings.broker.bootstrap, **producer_options(stack)
        ) as producer,
        AsyncRecallClient(stack.url, api_key=API_KEY) as recall,
    ):
        agent = build_memory_agent(
            model, recall=recall, producer=producer, checkpointer=InMemorySaver()
        )
        first = {"configurable": {"thread_id": "t1", "user_id": user}, "callbacks": [prompts]}
        await agent.ainvoke(
            {"messages": [("user", "I adopted a cat last week, she is called Miso.")]}, first
        )
        await producer.end_session(user_id=user, session_id="t1")
        await wait_for_leaves(recall, user, {"t1"})

        second = {"configurable": {"thread_id": "t2", "user_id": user}, "callbacks": [prompts]}
        state = await agent.ainvoke({"messages": [("user", "What is the name of my cat?")]}, second)
        await producer.end_session(user_id=user, session_id="t2")
        leaves = await wait_for_leaves(recall, user, {"t1", "t2"})

    first_system, second_system = (call[0] for call in prompts.calls)
    assert "Miso" not in str(first_system.content)  # nothing was remembered yet
    assert "Miso" in str(second_system.content)  # thread t2 never saw t1's messages...
    assert [m.type for m in state["messages"]] == ["human", "ai"]  # ...only its own
    assert any("Miso" in m.text for m in leaves if m.session_id == "t1")
