"""memstream for the OpenAI Agents SDK: a session that remembers, and a recall tool.

    session = MemstreamSession("s1", user_id="ann", producer=producer)
    agent = Agent(name="assistant", tools=[recall_tool(recall_client, "ann")])
    await Runner.run(agent, "I adopted a cat called Miso.", session=session)

`MemstreamSession` follows the SDK's Session protocol the way its `EncryptedSession` does: it
wraps the session that stores the transcript (`underlying_session`, an in-memory
`SQLiteSession` by default) and adds what memstream is for: every user and assistant message
the runner saves is also published to memstream, where it becomes long-term memory for any
later session. Tool calls, tool outputs and reasoning items stay in the transcript only.
`pop_item` and `clear_session` forget, in memstream too, the messages they remove.
`recall_tool` gives the agent a `recall_memories` function tool over the recall API.
"""

from __future__ import annotations

import json
from typing import Any

from agents import FunctionTool, SQLiteSession, function_tool
from agents.items import TResponseInputItem
from agents.memory import Session, SessionSettings

from memstream.client import AsyncMemstreamProducer, AsyncRecallClient
from memstream.integrations.session_turns import Role, SessionTurns

TEXT_PARTS = frozenset({"input_text", "output_text", "text"})


def item_message(item: TResponseInputItem) -> tuple[Role, str] | None:
    """The role and text of a user or assistant message item; None for any other item."""
    if not isinstance(item, dict) or item.get("type", "message") != "message":
        return None
    role = item.get("role")
    if role not in ("user", "assistant"):
        return None
    content = item.get("content")
    if isinstance(content, str):
        text = content
    else:
        parts = content if isinstance(content, list) else []
        text = "\n".join(
            str(part.get("text", ""))
            for part in parts
            if isinstance(part, dict) and part.get("type") in TEXT_PARTS
        )
    return (role, text) if text.strip() else None


def _key(item: TResponseInputItem) -> str:
    return json.dumps(item, sort_keys=True, default=str)


class MemstreamSession:
    """A Session (the SDK's protocol) whose user and assistant messages memstream remembers."""

    def __init__(
        self,
        session_id: str,
        *,
        user_id: str,
        producer: AsyncMemstreamProducer,
        underlying_session: Session | None = None,
        user_name: str | None = None,
        assistant_name: str | None = None,
    ) -> None:
        self.session_id = session_id
        self.user_id = user_id
        self.underlying_session = underlying_session or SQLiteSession(session_id)
        self._producer = producer
        self._turns: SessionTurns | None = None
        self._names = (user_name, assistant_name)
        self._published: list[tuple[str, str]] = []  # (item key, event id), oldest first

    @property
    def session_settings(self) -> SessionSettings | None:
        return self.underlying_session.session_settings

    @session_settings.setter
    def session_settings(self, value: SessionSettings | None) -> None:
        self.underlying_session.session_settings = value

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        return await self.underlying_session.get_items(limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Store the items, then publish their messages (seq: the message's place among the
        session's messages, without gaps: the segmenter waits for a missing seq)."""
        turns = await self._session_turns()
        await self.underlying_session.add_items(items)
        for item in items:
            message = item_message(item)
            if message is None:
                continue
            value = turns.turn(*message)
            await self._producer.publish(value)
            self._published.append((_key(item), str(value["event_id"])))
        await self._producer.flush()

    async def pop_item(self) -> TResponseInputItem | None:
        item = await self.underlying_session.pop_item()
        if item is None or self._turns is None:
            return item
        if item_message(item) is not None:  # only messages took a seq
            self._turns.next_seq = max(0, self._turns.next_seq - 1)
        if self._published and self._published[-1][0] == _key(item):
            _, event_id = self._published.pop()
            await self._publish_forget(self._turns.forget_last(event_id))
        return item

    async def clear_session(self) -> None:
        await self.underlying_session.clear_session()
        if self._turns is not None:
            self._published.clear()
            await self._publish_forget(self._turns.forget_all())
            self._turns.next_seq = 0

    async def _session_turns(self) -> SessionTurns:
        # Numbered after what the underlying session already holds, so a session reopened
        # from a file goes on where it stopped.
        if self._turns is None:
            items = await self.underlying_session.get_items()
            held = sum(item_message(item) is not None for item in items)
            self._turns = SessionTurns(self.user_id, self.session_id, held, *self._names)
        return self._turns

    async def _publish_forget(self, value: dict[str, Any] | None) -> None:
        if value is not None:
            await self._producer.publish(value)
            await self._producer.flush()


def recall_tool(
    client: AsyncRecallClient, user_id: str, *, max_tokens: int | None = None
) -> FunctionTool:
    """A `recall_memories(query)` tool: what memstream remembers about the user for `query`."""

    @function_tool(name_override="recall_memories")
    async def recall_memories(query: str) -> str:
        """Recall what you remember about the user from earlier conversations.

        Args:
            query: What to remember, as a question or keywords.
        """
        answer = await client.recall(user_id, query, max_tokens=max_tokens)
        if not answer.memories and not answer.facts:
            return "Nothing remembered about that."
        return answer.as_prompt()

    return recall_memories
