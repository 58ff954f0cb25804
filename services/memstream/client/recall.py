"""The recall API over HTTP: what to remember for a query, a user's profile, memories,
facts and entities.

    with RecallClient("http://memstream:8080", api_key=key) as memory:
        answer = memory.recall("ann", "Where does Ann work?")
        prompt_context = answer.as_prompt()
        now = memory.facts("ann", subject="Ann")          # what holds now, with validity

Every request carries the bearer key and a timeout. A 429, a 5xx or a connection failure
is retried with exponential backoff and jitter (every call is safe to repeat: recall
only reads, and forgetting twice forgets once); anything else raises `RecallError` at
once. An unknown user gets empty answers, as from the API; an unknown subject or entity
None. A server with the knowledge write off answers the facts and entities calls with a
`RecallError` of status 501.
"""

from __future__ import annotations

from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel
from tenacity import (
    AsyncRetrying,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
    wait_random,
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
)
from memstream.client.receipt import After, tokens_of
from memstream.client.requests import (
    after_params,
    entity_path,
    facts_params,
    memories_params,
    recall_body,
)
from memstream.client.tracing import context_headers

M = TypeVar("M", bound=BaseModel)
RETRIED_STATUS = frozenset({429, 500, 502, 503, 504})
# How long a recall `after` some receipts waits for them by default: under the API's
# default bound, and long enough for the segmenter's usual lag.
DEFAULT_WAIT_MS = 2_000


class RecallError(RuntimeError):
    """The API refused a request (or kept failing): the status and the API's explanation."""

    def __init__(self, status: int, detail: object) -> None:
        self.status = status
        self.detail = detail
        super().__init__(f"recall API answered {status}: {detail}")


def _retryable(error: BaseException) -> bool:
    if isinstance(error, RecallError):
        return error.status in RETRIED_STATUS
    return isinstance(error, httpx.TransportError)


def _raise_for(response: httpx.Response) -> None:
    if response.is_success:
        return
    try:
        detail: object = response.json().get("detail", response.text)
    except ValueError:
        detail = response.text
    raise RecallError(response.status_code, detail)


class _Base:
    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        timeout_s: float,
        attempts: int,
        backoff_s: tuple[float, float],
    ) -> None:
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._base_url = base_url.rstrip("/")
        self._timeout = httpx.Timeout(timeout_s)
        self._retry: dict[str, Any] = {
            "retry": retry_if_exception(_retryable),
            "stop": stop_after_attempt(attempts),
            "wait": wait_exponential(multiplier=backoff_s[0], max=backoff_s[1])
            + wait_random(0, backoff_s[0]),
            "reraise": True,
        }


class RecallClient(_Base):
    """Blocking client of the recall API (`httpx.Client`); close it, or use `with`."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 10.0,
        attempts: int = 4,
        backoff_s: tuple[float, float] = (0.2, 5.0),
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout_s, attempts, backoff_s)
        self._http = httpx.Client(
            base_url=self._base_url,
            headers=self._headers,
            timeout=self._timeout,
            transport=transport,
        )

    def __enter__(self) -> RecallClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _request(self, model: type[M], method: str, path: str, **kwargs: Any) -> M:
        for attempt in Retrying(**self._retry):
            with attempt:
                response = self._http.request(method, path, headers=context_headers(), **kwargs)
                _raise_for(response)
        return model.model_validate(response.json())

    def _found(self, model: type[M], path: str, **kwargs: Any) -> M | None:
        """A GET of something that may not exist: None for a 404."""
        try:
            return self._request(model, "GET", path, **kwargs)
        except RecallError as error:
            if error.status == 404:
                return None
            raise

    def recall(
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
        """The memories that help answer `query` (as of `query_time`, within `max_tokens`);
        `with_derivation`: each memory says what wrote it (backend, model, prompts, embedder);
        `after`: receipts (or their tokens) of messages the answer must include, waited for
        at most `wait_ms` (the answer says `pending` if they are not in yet); `explain`: the
        answer's `trace` says what each stage kept and left out, and why."""
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
        return self._request(Recall, "POST", "/v1/recall", json=body)

    def profile(
        self, user_id: str, *, after: After | None = None, wait_ms: int = DEFAULT_WAIT_MS
    ) -> Profile:
        """The user's profile (after the messages of `after`, as `recall` waits for them)."""
        params = after_params(tokens_of(after), wait_ms)
        return self._request(Profile, "GET", f"/v1/users/{user_id}/profile", params=params)

    def memories(
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
        return self._request(MemoryPage, "GET", f"/v1/users/{user_id}/memories", params=params)

    def memory(self, user_id: str, memory_id: str) -> MemoryDetail | None:
        """One memory with its children and ancestors; None if the user has no such memory."""
        params = {"user_id": user_id}
        return self._found(MemoryDetail, f"/v1/memories/{memory_id}", params=params)

    def facts(
        self,
        user_id: str,
        *,
        at: datetime | None = None,
        subject: str | None = None,
        history: bool = False,
    ) -> Facts | None:
        """The facts that hold now (`at`: then, as known today; `history`: every version),
        of everyone or of `subject` (a name, alias or key); None if no such subject."""
        params = facts_params(at, subject, history)
        return self._found(Facts, f"/v1/users/{user_id}/facts", params=params)

    def entities(self, user_id: str, *, limit: int = 50) -> Entities:
        """The people, pets, places and things the user's memories name, most mentioned first."""
        path = f"/v1/users/{user_id}/entities"
        return self._request(Entities, "GET", path, params={"limit": limit})

    def entity(self, user_id: str, name: str, *, limit: int = 20) -> EntityDetail | None:
        """One entity (by name, alias or key) with its facts' timeline and the exchanges
        naming it (at most `limit`); None if the user's memories name no such entity."""
        path = entity_path(user_id, name)
        return self._found(EntityDetail, path, params={"limit": limit})

    def forget_user(self, user_id: str) -> ForgetResult:
        return self._request(ForgetResult, "DELETE", f"/v1/users/{user_id}")


class AsyncRecallClient(_Base):
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
                _raise_for(response)
        return model.model_validate(response.json())

    async def _found(self, model: type[M], path: str, **kwargs: Any) -> M | None:
        try:
            return await self._request(model, "GET", path, **kwargs)
        except RecallError as error:
            if error.status == 404:
                return None
            raise

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

    async def memory(self, user_id: str, memory_id: str) -> MemoryDetail | None:
        params = {"user_id": user_id}
        return await self._found(MemoryDetail, f"/v1/memories/{memory_id}", params=params)

    async def facts(
        self,
        user_id: str,
        *,
        at: datetime | None = None,
        subject: str | None = None,
        history: bool = False,
    ) -> Facts | None:
        params = facts_params(at, subject, history)
        return await self._found(Facts, f"/v1/users/{user_id}/facts", params=params)

    async def entities(self, user_id: str, *, limit: int = 50) -> Entities:
        path = f"/v1/users/{user_id}/entities"
        return await self._request(Entities, "GET", path, params={"limit": limit})

    async def entity(self, user_id: str, name: str, *, limit: int = 20) -> EntityDetail | None:
        path = entity_path(user_id, name)
        return await self._found(EntityDetail, path, params={"limit": limit})

    async def forget_user(self, user_id: str) -> ForgetResult:
        return await self._request(ForgetResult, "DELETE", f"/v1/users/{user_id}")
