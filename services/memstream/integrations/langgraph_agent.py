"""An example LangGraph agent that remembers across threads: copy it, or build on it.

    agent = build_memory_agent(model, recall=AsyncRecallClient(url, api_key=key),
                               producer=producer, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1", "user_id": "ann"}}
    await agent.ainvoke({"messages": [("user", "I adopted a cat called Miso.")]}, config)
    # ... later, in a thread that never saw that message:
    config = {"configurable": {"thread_id": "t2", "user_id": "ann"}}
    await agent.ainvoke({"messages": [("user", "What is my cat called?")]}, config)

A thread's checkpoint holds its own messages (short-term memory); memstream holds what the
user said in every thread (long-term memory). Each turn runs three nodes: `recall` asks
memstream what it remembers that bears on the user's last message, `respond` calls the model
with that in its system prompt, and `remember` publishes the user's message and the reply as
turns of the session named by the thread id, numbered by their place in the thread.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from memstream.client import AsyncMemstreamProducer, AsyncRecallClient
from memstream.integrations.langchain_history import message_role
from memstream.integrations.session_turns import SessionTurns

DEFAULT_SYSTEM = "You are a helpful assistant."


class MemoryState(MessagesState):
    """The thread's messages and what memstream recalled for the latest one."""

    recalled: str


def _who(config: RunnableConfig) -> tuple[str, str]:
    configurable = config.get("configurable", {})
    try:
        return str(configurable["user_id"]), str(configurable["thread_id"])
    except KeyError as missing:
        raise ValueError(f"the agent's config needs configurable.{missing.args[0]}") from None


def build_memory_agent(
    model: BaseChatModel,
    *,
    recall: AsyncRecallClient,
    producer: AsyncMemstreamProducer,
    checkpointer: Checkpointer = None,
    system: str = DEFAULT_SYSTEM,
    max_tokens: int | None = None,
) -> CompiledStateGraph[MemoryState, None, MemoryState, MemoryState]:
    """The compiled graph; invoke it with `configurable.user_id` and `configurable.thread_id`."""

    async def recall_memories(state: MemoryState, config: RunnableConfig) -> dict[str, Any]:
        user_id, _ = _who(config)
        query = state["messages"][-1].text
        answer = await recall.recall(user_id, query, max_tokens=max_tokens)
        return {"recalled": answer.as_prompt() if answer.memories or answer.facts else ""}

    async def respond(state: MemoryState) -> dict[str, Any]:
        prompt = "\n\n".join(part for part in (system, state.get("recalled", "")) if part)
        reply = await model.ainvoke([SystemMessage(prompt), *state["messages"]])
        return {"messages": [reply]}

    async def remember(state: MemoryState, config: RunnableConfig) -> dict[str, Any]:
        user_id, thread_id = _who(config)
        messages = state["messages"]
        # This turn's messages: the reply and the user's messages before it, back to the
        # previous reply (a thread's seq is the message's place among the thread's messages
        # that are remembered, without gaps: the segmenter waits for a missing seq).
        start = len(messages) - 1
        while start > 0 and messages[start - 1].type != "ai":
            start -= 1
        before = sum(message_role(m) is not None for m in messages[:start])
        turns = SessionTurns(user_id, thread_id, next_seq=before)
        for message in messages[start:]:
            role = message_role(message)
            if role is not None:
                await producer.publish(turns.turn(role, message.text, event_id=message.id))
        await producer.flush()
        return {}

    graph = StateGraph(MemoryState)
    graph.add_node("recall", recall_memories)
    graph.add_node("respond", respond)
    graph.add_node("remember", remember)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "respond")
    graph.add_edge("respond", "remember")
    graph.add_edge("remember", END)
    return graph.compile(checkpointer=checkpointer)
