"""`after` and `wait_ms` of a read: the write tokens checked, then the wait for them.

A token that is malformed, forged, stale or from the future is a 422 naming the field
(`loc: [body, after]`, the reason in `type`), and one issued for another user a 403: a
client learns at once that the token will never be satisfied, instead of waiting for it.
So is a token of another turns topic than the one the API routes its user to
(`write_token_moved`: the tenants' topics changed since it was issued, or the producer was
given another list), which no mark of the user's topic could answer truly.
"""

# No `from __future__ import annotations`: FastAPI reads the query dependency's annotations
# at definition time, and its bound is a local of `after_query`.

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import HTTPException, Query
from fastapi.exceptions import RequestValidationError
from pydantic import SecretStr

from memstream.domain.write_token import BadWriteToken, WritePosition, verify
from memstream.edges.http.schemas import MAX_WRITE_TOKENS, Problem
from memstream.recall.writes import WriteStatus, WriteWaiter

# A token older than the turns topic keeps its records (7 days) plus a day, as the seen
# markers: the record it names may be gone and its progress mark with it.
MAX_TOKEN_AGE_MS = 8 * 24 * 3600 * 1000
# What a read with `after` may answer besides its own: a token issued for another user.
FOREIGN_TOKEN: dict[int | str, dict[str, Any]] = {
    403: {"model": Problem, "description": "A write token of another user."}
}


def positions(
    user_id: str,
    after: str | Sequence[str] | None,
    key: SecretStr | None,
    location: str,
    topic: str | None = None,
) -> list[WritePosition]:
    """The positions `after` names, or the 4xx that refuses it; `topic`: the user's turns
    topic when it is a tenant's (None: the shared one)."""
    tokens = [after] if isinstance(after, str) else list(after or ())
    secret = key.get_secret_value().encode() if key is not None else b""
    now_ms = int(time.time() * 1000)
    found: list[WritePosition] = []
    for index, token in enumerate(tokens):
        try:
            found.append(
                verify(
                    token,
                    user_id,
                    now_ms=now_ms,
                    max_age_ms=MAX_TOKEN_AGE_MS,
                    key=secret,
                    topic=topic,
                )
            )
        except BadWriteToken as bad:
            loc: list[str | int] = [location, "after"]
            if not isinstance(after, str):
                loc.append(index)
            if bad.reason == "other_user":
                raise HTTPException(status_code=403, detail=f"after: {bad}") from None
            raise RequestValidationError(
                [{"type": f"write_token_{bad.reason}", "loc": loc, "msg": str(bad)}]
            ) from None
    return found


@dataclass(frozen=True, slots=True)
class AfterQuery:
    """`after` and `wait_ms` as query parameters, for the GET routes that read the tree,
    with the deployment's write-token key to check them."""

    after: list[str]
    wait_ms: int
    key: SecretStr | None = None

    async def settle(self, waiter: WriteWaiter, user_id: str) -> WriteStatus:
        """Check the tokens for `user_id`, then wait for them (`settle`)."""
        return await settle(waiter, user_id, self.after, self.wait_ms, self.key, "query")


def after_query(
    max_wait_ms: int, key: SecretStr | None = None
) -> Callable[..., Awaitable[AfterQuery]]:
    """The dependency reading `?after=<token>&after=...&wait_ms=N` (bounded by the setting)."""

    async def read(
        after: Annotated[
            list[str],
            Query(
                max_length=MAX_WRITE_TOKENS,
                description="Write token(s) of publish receipts: answer once the segmenter "
                "has committed past them (docs/read-your-writes.md).",
            ),
        ] = [],  # noqa: B006 (FastAPI copies a default; it is never mutated)
        wait_ms: Annotated[
            int, Query(ge=0, le=max_wait_ms, description="Most milliseconds to wait for `after`.")
        ] = 0,
    ) -> AfterQuery:
        return AfterQuery(after, wait_ms, key)

    return read


def seen(status: WriteStatus) -> dict[str, Any]:
    """The `WritesSeen` fields of an answer."""
    return {
        "pending": status.pending,
        "pending_reason": status.reason,
        "held_messages": list(status.held),
    }


def not_found(what: str, status: WriteStatus) -> str:
    """A 404's detail, saying when the writes named in `after` may still bring it."""
    detail = f"no such {what} for this user"
    if status.pending:
        detail += f" yet: the writes named in `after` are pending ({status.reason})"
    return detail


async def settle(
    waiter: WriteWaiter,
    user_id: str,
    after: str | Sequence[str] | None,
    wait_ms: int,
    key: SecretStr | None,
    location: str = "body",
) -> WriteStatus:
    """Check `after`, then wait up to `wait_ms` for the segmenter to commit past it."""
    found = positions(user_id, after, key, location, waiter.marked_topic(user_id))
    return await waiter.wait(user_id, found, wait_ms / 1000)
