"""`POST /v1/feed:open`: the API opens sealed records of memstream's topics for their
consumers (`recall/opening.py`; docs/forget-everywhere.md)."""

# No `from __future__ import annotations`: FastAPI reads the route annotations at definition time.

from typing import Any, Literal

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, Field

from memstream.edges.http.parts import Parts
from memstream.edges.http.schemas import Problem
from memstream.edges.http.tenancy import WithinReach
from memstream.recall.opening import EnvelopeOpener

MAX_RECORDS = 500  # a feed consumer's poll (the SDK's batch)


class OpenRequest(BaseModel):
    records: list[dict[str, Any]] = Field(
        min_length=1,
        max_length=MAX_RECORDS,
        description="Values as read from the memories or dead-letter topic, sealed or not.",
    )


class OpenedRecord(BaseModel):
    status: Literal["opened", "plain", "forgotten", "invalid"] = Field(
        description="opened: the value as published; plain: it was not sealed, as given; "
        "forgotten: its user's key is gone (the user was forgotten), nothing can be read; "
        "invalid: not an envelope this server reads, or it does not open under its user's key, "
        "or its user is out of the key's reach ('no such user')."
    )
    value: dict[str, Any] | None = Field(None, description="With opened and plain.")
    reason: str | None = Field(None, description="With invalid: why.")


class OpenResponse(BaseModel):
    records: list[OpenedRecord] = Field(description="One per record asked, in the same order.")


def feed_routes(router: APIRouter) -> None:
    @router.post(
        "/feed:open",
        response_model=OpenResponse,
        tags=["feed"],
        responses={400: {"model": Problem, "description": "The body is not UTF-8 JSON."}},
    )
    async def open_records(body: OpenRequest, parts: Parts, caller: WithinReach) -> OpenResponse:
        """Open sealed records of the change feed or the dead-letter topic: each answered on
        its own (a damaged record does not fail the others). A tenant key opens its own
        users' records only: another's is `invalid`, `no such user`."""
        opener: EnvelopeOpener | None = parts.opener
        if opener is None:
            raise HTTPException(status_code=501, detail="this process opens no sealed records")
        opened = await opener.open(body.records, caller.reaches)
        return OpenResponse(
            records=[OpenedRecord(status=o.status, value=o.value, reason=o.reason) for o in opened]
        )
