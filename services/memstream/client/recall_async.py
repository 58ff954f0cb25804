"""The recall clients' asyncio twin: the same calls as `RecallClient`, awaited.

async with AsyncRecallClient("http://memstream:8080", api_key=key) as memory:
    answer = await memory.recall("ann", "Where does Ann work?", after=receipt)
"""

from __future__ import annotations

import base64
from datetime import datetime
from types import TracebackType
from typing import Any

import httpx
from tenacity import AsyncRetrying

from memstream.client.http_base import (
    DEFAULT_WAIT_MS,
    ClientBase,
    M,
    RecallError,
    raise_for,
)
from memstream.client.models import (
    Entities,
    EntityDetail,
    Facts,
    ForgetResult,
    MemoryDetail,
    MemoryPage,
    Profile,
    Recall,
    TurnKey,
)
from memstream.client.opening import OpenedRecord, OpenedRecords
from memstream.client.receipt import After, tokens_of
from memstream.client.requests import (
    after_params,
    entity_path,
    facts_params,
    memories_params,
    recall_body,
)
from memstream.client.tracing import context_headers


class AsyncRecallClient(ClientBase):
    """The same calls for asyncio code (`httpx.AsyncClient`); `aclose()` it, or `async with`."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 10.0,
        attempts: int = 4,
        backoff_s: tuple[float, float] = (0.2, 5.0),
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout_s, attempts, backoff_s)
        self._http = httpx.AsyncClient(
            base_url=self._base_url,
            headers=self._headers,
            timeout=self._timeout,
            transport=transport,
        )

    async def __aenter__(self) -> AsyncRecallClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _request(self, model: type[M], method: str, path: str, **kwargs: Any) -> M:
        async for attempt in AsyncRetrying(**self._retry):
            with attempt:
                response = await self._http.request(
                    method, path, headers=context_headers(), **kwargs
                )
                raise_for(response)
        return model.model_validate(response.json())

    async def _found(self, model: type[M], path: str, **kwargs: Any) -> M | None:
        try:
            return await self._request(model, "GET", path, **kwargs)
        except RecallError as error:
            if error.status == 404:
                return None
            raise

    async def open_records(self, records: list[dict[str, Any]]) -> list[OpenedRecord]:
        """Sealed records of the feed or the dead-letter topic opened by the API, in order
        (`MemoryFeed` calls it with each poll's sealed records; at most 500 at a time)."""
        answer = await self._request(
            OpenedRecords, "POST", "/v1/feed:open", json={"records": records}
        )
        return answer.records

    async def turn_key(self, user_id: str) -> bytes:
        """The public key to seal the user's turns for (a producer's `seal_turns`); a
        forgotten user: `RecallError` 409; a user the key does not reach: 404."""
        answer = await self._request(TurnKey, "GET", f"/v1/users/{user_id}/turn-key")
        if answer.envelope != "sealed_turn.v1":
            raise ValueError(f"the API seals turns in {answer.envelope!r}, unknown to this SDK")
        return base64.b64decode(answer.public_key, validate=True)

    async def recall(
        self,
        user_id: str,
        query: str,
        *,
        query_time: datetime | None = None,
        complexity: str = "auto",
        max_tokens: int | None = None,
        with_derivation: bool = False,
        after: After | None = None,
        wait_ms: int = DEFAULT_WAIT_MS,
        explain: bool = False,
    ) -> Recall:
        body = recall_body(
            user_id,
            query,
            query_time,
            complexity,
            max_tokens,
            with_derivation,
            tokens_of(after),
            wait_ms,
            explain,
        )
        return await self._request(Recall, "POST", "/v1/recall", json=body)

    async def profile(
        self, user_id: str, *, after: After | None = None, wait_ms: int = DEFAULT_WAIT_MS
    ) -> Profile:
        params = after_params(tokens_of(after), wait_ms)
        return await self._request(Profile, "GET", f"/v1/users/{user_id}/profile", params=params)

    async def memories(
        self,
        user_id: str,
        *,
        level: int | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
        after: After | None = None,
        wait_ms: int = DEFAULT_WAIT_MS,
    ) -> MemoryPage:
        params = memories_params(level, start, end, limit, cursor)
        params |= after_params(tokens_of(after), wait_ms)
        return await self._request(
            MemoryPage, "GET", f"/v1/users/{user_id}/memories", params=params
        )

    async def memory(
        self,
        user_id: str,
        memory_id: str,
        *,
        after: After | None = None,
        wait_ms: int = DEFAULT_WAIT_MS,
    ) -> MemoryDetail | None:
        params = {"user_id": user_id} | after_params(tokens_of(after), wait_ms)
        return await self._found(MemoryDetail, f"/v1/memories/{memory_id}", params=params)

    async def facts(
        self,
        user_id: str,
        *,
        at: datetime | None = None,
        subject: str | None = None,
        history: bool = False,
        after: After | None = None,
        wait_ms: int = DEFAULT_WAIT_MS,
    ) -> Facts | None:
        params = facts_params(at, subject, history) | after_params(tokens_of(after), wait_ms)
        return await self._found(Facts, f"/v1/users/{user_id}/facts", params=params)

    async def entities(
        self,
        user_id: str,
        *,
        limit: int = 50,
        after: After | None = None,
        wait_ms: int = DEFAULT_WAIT_MS,
    ) -> Entities:
        path = f"/v1/users/{user_id}/entities"
        params = {"limit": limit} | after_params(tokens_of(after), wait_ms)
        return await self._request(Entities, "GET", path, params=params)

    async def entity(
        self,
        user_id: str,
        name: str,
        *,
        limit: int = 20,
        after: After | None = None,
        wait_ms: int = DEFAULT_WAIT_MS,
    ) -> EntityDetail | None:
        path = entity_path(user_id, name)
        params = {"limit": limit} | after_params(tokens_of(after), wait_ms)
        return await self._found(EntityDetail, path, params=params)

    async def forget_user(self, user_id: str) -> ForgetResult:
        return await self._request(ForgetResult, "DELETE", f"/v1/users/{user_id}")
