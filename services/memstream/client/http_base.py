"""What the recall clients share: the error a refusal raises, which failures are retried
and how, and the connection settings."""

from __future__ import annotations

from typing import Any, TypeVar

import httpx
from pydantic import BaseModel
from tenacity import retry_if_exception, stop_after_attempt, wait_exponential, wait_random

M = TypeVar("M", bound=BaseModel)
RETRIED_STATUS = frozenset({429, 500, 502, 503, 504})
# How long a read `after` some receipts waits for them by default: under the API's
# default bound, and long enough for the segmenter's usual lag.
DEFAULT_WAIT_MS = 2_000


class RecallError(RuntimeError):
    """The API refused a request (or kept failing): the status and the API's explanation."""

    def __init__(self, status: int, detail: object) -> None:
        self.status = status
        self.detail = detail
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
    raise RecallError(response.status_code, detail)


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
            "wait": wait_exponential(multiplier=backoff_s[0], max=backoff_s[1])
            + wait_random(0, backoff_s[0]),
            "reraise": True,
        }
