"""A LangChain chat-message history that publishes the conversation to memstream.

    history = MemstreamChatMessageHistory("s1", user_id="ann", producer=producer)
    history.add_messages([HumanMessage("I adopted a cat called Miso."), AIMessage(reply)])

memstream keeps memories, not transcripts: `messages` are the ones added through this object
(the window a chain replays), while every human and AI message is also published to the
turns topic, where it becomes long-term memory that `MemstreamRetriever` recalls in any later
session. System and tool messages stay in the window and are not remembered. `clear()`
empties the window and forgets, in memstream too, the messages this history published.

Like langchain-postgres' history, it takes a sync or an async client built elsewhere: a
`MemstreamProducer` serves `add_messages` (and `aadd_messages` in a worker thread), an
`AsyncMemstreamProducer` serves `aadd_messages` and `aclear` on the caller's loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, ChatMessage

from memstream.client import AsyncMemstreamProducer, MemstreamProducer
from memstream.integrations.session_turns import Role, SessionTurns

# By message type, and for a ChatMessage (type "chat") by the role it names.
ROLES: dict[str, Role] = {"human": "user", "ai": "assistant"}
CHAT_ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant"}


def message_role(message: BaseMessage) -> Role | None:
    """memstream's role for a LangChain message, None for one not to remember (system, tool,
    or an AI message that only calls tools)."""
    if isinstance(message, ChatMessage):
        role = CHAT_ROLES.get(message.role)
    else:
        role = ROLES.get(message.type)
    if role is None or not message.text.strip():
        return None
    return role


class MemstreamChatMessageHistory(BaseChatMessageHistory):
    """The messages of one session (`session_id`) of one user, published to memstream."""

    def __init__(
        self,
        session_id: str,
        *,
        user_id: str,
        producer: MemstreamProducer | None = None,
        async_producer: AsyncMemstreamProducer | None = None,
        user_name: str | None = None,
        assistant_name: str | None = None,
        start_seq: int = 0,
    ) -> None:
        if producer is None and async_producer is None:
            raise ValueError("pass a producer (MemstreamProducer) or an async_producer")
        self.session_id = session_id
        self.user_id = user_id
        self._producer = producer
        self._async_producer = async_producer
        self._turns = SessionTurns(user_id, session_id, start_seq, user_name, assistant_name)
        self._messages: list[BaseMessage] = []

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return list(self._messages)

    async def aget_messages(self) -> list[BaseMessage]:
        return list(self._messages)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Publish the human and AI messages, wait for the broker's ack, then keep them all."""
        producer = self._sync_producer("add_messages", "aadd_messages")
        for value in self._turn_values(messages):
            producer.publish(value)
        producer.flush()
        self._messages.extend(messages)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        if self._async_producer is None:
            await asyncio.to_thread(self.add_messages, messages)
            return
        for value in self._turn_values(messages):
            await self._async_producer.publish(value)
        await self._async_producer.flush()
        self._messages.extend(messages)

    def clear(self) -> None:
        """Empty the window and forget the messages published through this history."""
        forget = self._turns.forget_all()
        if forget is not None:
            producer = self._sync_producer("clear", "aclear")
            producer.publish(forget)
            producer.flush()
        self._messages.clear()

    async def aclear(self) -> None:
        if self._async_producer is None:
            await asyncio.to_thread(self.clear)
            return
        forget = self._turns.forget_all()
        if forget is not None:
            await self._async_producer.publish(forget)
            await self._async_producer.flush()
        self._messages.clear()

    def _turn_values(self, messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
        """The turns to publish, in order; a message's own id becomes its event id."""
        return [
            self._turns.turn(role, message.text, event_id=message.id)
            for message in messages
            if (role := message_role(message)) is not None
        ]

    def _sync_producer(self, method: str, async_method: str) -> MemstreamProducer:
        if self._producer is None:
            raise RuntimeError(
                f"{method} needs a MemstreamProducer; with an async one use {async_method}"
            )
        return self._producer
