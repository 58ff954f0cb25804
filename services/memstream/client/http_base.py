"""What the recall clients share: the error a refusal raises, which failures are retried
and how, and the connection settings."""

from __future__ import annotations

from typing import Any, TypeVar

import httpx
from pydantic import BaseModel
from tenacity import (
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

M = TypeVar("M", bound=BaseModel)
RETRIED_STATUS = frozenset({429, 500, 502, 503, 504})
# How long a read `after` some receipts waits for them by default: under the API's
# default bound, and long enough for the segmenter's usual lag.
DEFAULT_WAIT_MS = 2_000
# The longest `Retry-After` honoured: a longer one is waited this long, then tried again.
MAX_RETRY_AFTER_S = 60.0


class RecallError(RuntimeError):
    """The API refused a request (or kept failing): the status and the API's explanation."""

    def __init__(self, status: int, detail: object, retry_after_s: float | None = None) -> None:
        self.status = status
        self.detail = detail
        self.retry_after_s = retry_after_s  # what a 429 or 503 asked the client to wait
        super().__init__(f"recall API answered {status}: {detail}")


def retryable(error: BaseException) -> bool:
    if isinstance(error, RecallError):
        return error.status in RETRIED_STATUS
    return isinstance(error, httpx.TransportError)


def raise_for(response: httpx.Response) -> None:
    if response.is_success:
        return
    try:
        detail: object = response.json().get("detail", response.text)
    except ValueError:
        detail = response.text
    raise RecallError(response.status_code, detail, retry_after(response))


def retry_after(response: httpx.Response) -> float | None:
    """The seconds of a `Retry-After: <seconds>` header (its date form is not honoured)."""
    value = response.headers.get("retry-after", "").strip()
    return min(float(value), MAX_RETRY_AFTER_S) if value.isdigit() else None


class WaitAsAsked:
    """Tenacity's wait: the backoff, or longer when the API said how long (`Retry-After`)."""

    def __init__(self, backoff_s: tuple[float, float]) -> None:
        self._backoff = wait_exponential(multiplier=backoff_s[0], max=backoff_s[1]) + wait_random(
            0, backoff_s[0]
        )

    def __call__(self, state: RetryCallState) -> float:
        waited = float(self._backoff(state))
        error = state.outcome.exception() if state.outcome is not None else None
        asked = getattr(error, "retry_after_s", None)
        return max(waited, asked) if asked is not None else waited


class ClientBase:
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
            "retry": retry_if_exception(retryable),
            "stop": stop_after_attempt(attempts),
            "wait": WaitAsAsked(backoff_s),
            "reraise": True,
        }
