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
from typing import Any

import httpx
from tenacity import Retrying

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


class RecallClient(ClientBase):
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
                raise_for(response)
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

    def memory(
        self,
        user_id: str,
        memory_id: str,
        *,
        after: After | None = None,
        wait_ms: int = DEFAULT_WAIT_MS,
    ) -> MemoryDetail | None:
        """One memory with its children and ancestors; None if the user has no such memory
        (`after` and `wait_ms` as for `recall`, here and in the calls below)."""
        params = {"user_id": user_id} | after_params(tokens_of(after), wait_ms)
        return self._found(MemoryDetail, f"/v1/memories/{memory_id}", params=params)

    def facts(
        self,
        user_id: str,
        *,
        at: datetime | None = None,
        subject: str | None = None,
        history: bool = False,
        after: After | None = None,
        wait_ms: int = DEFAULT_WAIT_MS,
    ) -> Facts | None:
        """The facts that hold now (`at`: then, as known today; `history`: every version),
        of everyone or of `subject` (a name, alias or key); None if no such subject."""
        params = facts_params(at, subject, history) | after_params(tokens_of(after), wait_ms)
        return self._found(Facts, f"/v1/users/{user_id}/facts", params=params)

    def entities(
        self,
        user_id: str,
        *,
        limit: int = 50,
        after: After | None = None,
        wait_ms: int = DEFAULT_WAIT_MS,
    ) -> Entities:
        """The people, pets, places and things the user's memories name, most mentioned first."""
        path = f"/v1/users/{user_id}/entities"
        params = {"limit": limit} | after_params(tokens_of(after), wait_ms)
        return self._request(Entities, "GET", path, params=params)

    def entity(
        self,
        user_id: str,
        name: str,
        *,
        limit: int = 20,
        after: After | None = None,
        wait_ms: int = DEFAULT_WAIT_MS,
    ) -> EntityDetail | None:
        """One entity (by name, alias or key) with its facts' timeline and the exchanges
        naming it (at most `limit`); None if the user's memories name no such entity."""
        path = entity_path(user_id, name)
        params = {"limit": limit} | after_params(tokens_of(after), wait_ms)
        return self._found(EntityDetail, path, params=params)

    def forget_user(self, user_id: str) -> ForgetResult:
        return self._request(ForgetResult, "DELETE", f"/v1/users/{user_id}")
