"""The operator's routes across users: a search by id prefix, and one user's overview.

The overview is what a timeline shows before it loads a page of memories: counts per level
(from the level indexes), the span of the exchanges, the windows still open, and the nodes
the offline fallback wrote (`recall.users`, `ports.UserDirectory`).
"""

# No `from __future__ import annotations`: FastAPI reads the route annotations at definition time.

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, Field

from memstream.domain.models import Level
from memstream.domain.tenancy import scoped_prefix
from memstream.domain.user_overview import UserListing, UserOverview
from memstream.edges.http.parts import Parts, UserIdPath
from memstream.edges.http.schemas import USER_ID_MAX_CHARS, Problem, Text
from memstream.edges.http.tenancy import NO_SUCH_USER, WithinReach
from memstream.recall.service import InvalidCursor


class UserItem(BaseModel):
    user_id: str
    last_seen: datetime | None = Field(description="When its messages were last written.")
    memories: int | None = Field(description="How many exchanges (level 1 memories) it has.")

    @classmethod
    def of(cls, listing: UserListing) -> "UserItem":
        return cls(user_id=listing.user_id, last_seen=listing.last_seen, memories=listing.memories)


class UserPage(BaseModel):
    items: list[UserItem] = Field(description="Sorted by user id.")
    next_cursor: str | None = Field(
        description="Pass as `cursor` for the next page; null at the end."
    )


class PendingWindowModel(BaseModel):
    level: int = Field(ge=1, le=5)
    start: datetime
    end: datetime | None = Field(description="Null for the messages waiting to become an exchange.")


class UserOverviewResponse(BaseModel):
    user_id: str
    counts: dict[str, int] = Field(description='Memories per level, "1" (exchanges) to "5".')
    first_at: datetime | None = Field(description="The start of its first exchange.")
    last_at: datetime | None = Field(description="The end of its last exchange.")
    last_written_at: datetime | None = Field(description="When its messages were last written.")
    pending_windows: list[PendingWindowModel] = Field(
        description="Windows not consolidated yet, by level then start."
    )
    degraded: int = Field(
        ge=0, description="Nodes the offline fallback wrote, to be written again."
    )

    @classmethod
    def of(cls, overview: UserOverview) -> "UserOverviewResponse":
        return cls(
            user_id=overview.user_id,
            counts={str(int(level)): overview.counts.get(level, 0) for level in Level},
            first_at=overview.first_at,
            last_at=overview.last_at,
            last_written_at=overview.last_written_at,
            pending_windows=[
                PendingWindowModel(level=int(w.level), start=w.start, end=w.end)
                for w in overview.pending_windows
            ],
            degraded=overview.degraded,
        )


def user_routes(router: APIRouter) -> None:
    @router.get("/users", response_model=UserPage, tags=["users"])
    async def users(
        parts: Parts,
        caller: WithinReach,
        prefix: Annotated[Text, Query(max_length=USER_ID_MAX_CHARS)] = "",
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        cursor: Annotated[Text | None, Query(max_length=200)] = None,
    ) -> UserPage:
        """Users whose id starts with `prefix`, sorted by id, a page at a time (a tenant's
        key: only its own users, whatever the prefix)."""
        searched = prefix if caller.tenant is None else scoped_prefix(caller.tenant, prefix)
        if searched is None:
            return UserPage(items=[], next_cursor=None)
        try:
            page = await parts.users.page(searched, limit, cursor)
        except InvalidCursor as exc:
            raise HTTPException(
                status_code=422,
                detail=[{"loc": ["query", "cursor"], "msg": str(exc), "type": "value_error"}],
            ) from exc
        return UserPage(items=[UserItem.of(u) for u in page.items], next_cursor=page.next_cursor)

    @router.get(
        "/users/{user_id}/overview",
        response_model=UserOverviewResponse,
        responses={404: {"model": Problem, "description": "No such user."}},
        tags=["users"],
    )
    async def overview(user_id: UserIdPath, parts: Parts) -> UserOverviewResponse:
        """The user's memories per level, their span, the windows still open and the nodes
        waiting to be written again."""
        found = await parts.users.overview(user_id)
        if found is None:
            raise HTTPException(status_code=404, detail=NO_SUCH_USER)
        return UserOverviewResponse.of(found)
