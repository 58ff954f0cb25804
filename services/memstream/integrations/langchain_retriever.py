"""memstream's recall as a LangChain retriever.

    retriever = MemstreamRetriever(user_id="ann", client=RecallClient(url, api_key=key))
    docs = retriever.invoke("Where does Ann work now?")

Each memory becomes a `Document` whose content is the memory's text and whose metadata says
where it sits in the tree and in time: `level` (1 an exchange ... 5 the profile),
`level_name`, `t_start`/`t_end` (the interval it covers, ISO 8601), `source_ids` (the event
ids of the messages it comes from), `session_id`, `score`, and, when the server dates it,
`valid_from`/`valid_to`/`superseded_by`. With the knowledge write on, the facts the question
asks about come first, as documents of `kind` "fact" with their own validity and `status`
("holds", "planned": told to begin later, or "ended"). Documents keep
recall's order. Like other LangChain retrievers over a service, it takes a client built
elsewhere: `client` for `invoke`, `async_client` for `ainvoke` (without one, `ainvoke` runs
the sync client in a worker thread).
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from memstream.client import AsyncRecallClient, Fact, Memory, Recall, RecallClient


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def memory_document(memory: Memory) -> Document:
    metadata: dict[str, Any] = {
        "kind": "memory",
        "id": memory.id,
        "user_id": memory.user_id,
        "level": memory.level,
        "level_name": memory.level_name,
        "t_start": _iso(memory.t_start),
        "t_end": _iso(memory.t_end),
        "source_ids": list(memory.source_ids),
        "session_id": memory.session_id,
        "parent_id": memory.parent_id,
        "version": memory.version,
        "degraded": memory.degraded,
        "score": memory.score,
    }
    validity = {
        "valid_from": _iso(memory.valid_from),
        "valid_to": _iso(memory.valid_to),
        "superseded_by": memory.superseded_by,
    }
    metadata.update({k: v for k, v in validity.items() if v is not None})
    return Document(id=memory.id, page_content=memory.text, metadata=metadata)


def fact_document(fact: Fact) -> Document:
    metadata: dict[str, Any] = {
        "kind": "fact",
        "id": fact.fact_id,
        "subject": fact.subject_name,
        "attribute": fact.attribute,
        "value": fact.value,
        "certainty": fact.certainty,
        "negated": fact.negated,
        "holds": fact.holds,
        "status": fact.status,
        "valid_from": _iso(fact.valid_from),
        "valid_to": _iso(fact.valid_to),
        "supersedes": fact.supersedes,
        "superseded_by": fact.superseded_by,
        "recorded_at": _iso(fact.recorded_at),
        "source_ids": list(fact.source_ids),
    }
    return Document(id=fact.fact_id, page_content=fact.text, metadata=metadata)


def recall_documents(answer: Recall, *, with_facts: bool = True) -> list[Document]:
    """The facts (first) and the memories of one recall, in recall's order."""
    facts = [fact_document(f) for f in answer.facts] if with_facts else []
    return facts + [memory_document(m) for m in answer.memories]


class MemstreamRetriever(BaseRetriever):
    """What memstream remembers about `user_id` that bears on the query."""

    user_id: str
    client: RecallClient | None = None
    async_client: AsyncRecallClient | None = None
    max_tokens: int | None = None
    """The token budget of one recall (None: the server's default)."""
    complexity: str = "auto"
    with_facts: bool = True

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.client is None:
            raise ValueError("MemstreamRetriever.invoke needs `client` (a RecallClient)")
        answer = self.client.recall(
            self.user_id, query, complexity=self.complexity, max_tokens=self.max_tokens
        )
        return recall_documents(answer, with_facts=self.with_facts)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.async_client is None:
            sync_manager = run_manager.get_sync()
            return await asyncio.to_thread(
                self._get_relevant_documents, query, run_manager=sync_manager
            )
        answer = await self.async_client.recall(
            self.user_id, query, complexity=self.complexity, max_tokens=self.max_tokens
        )
        return recall_documents(answer, with_facts=self.with_facts)
