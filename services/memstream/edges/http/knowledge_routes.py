"""The knowledge routes: a user's facts (now, at a time, every version) and entities.

With the knowledge write off (`MEMSTREAM_KNOWLEDGE`), nothing is extracted, so an empty list
would read as "nothing is known" when nothing was looked for: every route answers 501 with
a detail saying the write is off. An unknown subject or entity is a 404; a user with no
memories has no facts and no entities (an empty 200, as elsewhere in the API).
"""

# No `from __future__ import annotations`: FastAPI reads the route annotations at definition time.

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, Query
from pydantic import AfterValidator, BeforeValidator

from memstream.edges.http.fact_schema import Fact
from memstream.edges.http.knowledge_schemas import (
    ENTITY_NAME_MAX_CHARS,
    ENTITY_NAME_PATTERN,
    EntityDetailResponse,
    EntityPageResponse,
    EntitySummary,
    FactsResponse,
    valid_entity_name,
)
from memstream.edges.http.parts import Parts, UserIdPath
from memstream.edges.http.schemas import DateTime, Memory, Problem
from memstream.edges.http.writes import FOREIGN_TOKEN, AfterQuery, not_found, seen
from memstream.recall.knowledge import KnowledgeService

KNOWLEDGE_OFF = (
    "the knowledge write is off on this deployment (MEMSTREAM_KNOWLEDGE=false): no facts or "
    "entities are kept, so none can be listed"
)
_OFF: dict[int | str, dict[str, Any]] = {
    501: {"model": Problem, "description": "The knowledge write is off."}
}
_NAME_SPEC = {"pattern": ENTITY_NAME_PATTERN}


def query_bool(value: Any) -> Any:
    """Only `true` or `false`, as the spec's boolean is written in a query: FastAPI alone
    would also take 1, yes or on, which the spec does not allow."""
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    raise ValueError("expected true or false")


QueryBool = Annotated[bool, BeforeValidator(query_bool)]
EntityName = Annotated[str, AfterValidator(valid_entity_name)]


async def _knowledge(parts: Parts) -> KnowledgeService:
    if parts.knowledge is None:
        raise HTTPException(status_code=501, detail=KNOWLEDGE_OFF)
    return parts.knowledge


Knowledge = Annotated[KnowledgeService, Depends(_knowledge)]


def knowledge_routes(router: APIRouter, reads_after: Callable[..., Awaitable[AfterQuery]]) -> None:
    """Add the facts and entities routes to the API's versioned router; `reads_after` is the
    dependency reading `after` and `wait_ms` (`edges.http.writes.after_query`)."""
    After = Annotated[AfterQuery, Depends(reads_after)]

    @router.get(
        "/users/{user_id}/facts",
        response_model=FactsResponse,
        responses={
            404: {"model": Problem, "description": "No such subject."},
            **_OFF,
            **FOREIGN_TOKEN,
        },
        tags=["knowledge"],
    )
    async def facts(
        user_id: UserIdPath,
        knowledge: Knowledge,
        parts: Parts,
        reads: After,
        at: Annotated[
            DateTime | None,
            Query(description="What held at this time (RFC 3339 with offset), as known today."),
        ] = None,
        subject: Annotated[
            EntityName | None,
            Query(
                min_length=1,
                max_length=ENTITY_NAME_MAX_CHARS,
                description='Only facts about this entity: a name ("Maya"), an alias '
                '("Maya\'s brother") or a subject key ("speaker:maya").',
                json_schema_extra=_NAME_SPEC,
            ),
        ] = None,
        history: Annotated[
            QueryBool,
            Query(
                description="Every version, superseded ones with their validity and links; "
                "with `at`, those that had begun by then."
            ),
        ] = False,
    ) -> FactsResponse:
        """The user's current facts; `at` for what held then; `history` for every version
        (after the writes in `after`)."""
        writes = await reads.settle(parts.writes, user_id)
        found = await knowledge.facts(user_id, subject=subject, at=at, history=history)
        if found is None:
            raise HTTPException(status_code=404, detail=not_found("subject", writes))
        return FactsResponse(
            user_id=user_id,
            subject=subject,
            at=at,
            history=history,
            # Each fact's status as of now: at a past `at`, a version since closed is ended;
            # at a later one, a change told to begin by then is still planned.
            facts=[Fact.of(f, knowledge.now()) for f in found],
            **seen(writes),
        )

    @router.get(
        "/users/{user_id}/entities",
        response_model=EntityPageResponse,
        responses={**_OFF, **FOREIGN_TOKEN},
        tags=["knowledge"],
    )
    async def entities(
        user_id: UserIdPath,
        knowledge: Knowledge,
        parts: Parts,
        reads: After,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
    ) -> EntityPageResponse:
        """The people, pets, places and things the user's memories name, most mentioned first
        (after the writes in `after`)."""
        writes = await reads.settle(parts.writes, user_id)
        page = await knowledge.entities(user_id, limit)
        return EntityPageResponse(
            user_id=user_id,
            total=page.total,
            entities=[EntitySummary.of(e) for e in page.entities],
            **seen(writes),
        )

    @router.get(
        "/users/{user_id}/entities/{entity}",
        response_model=EntityDetailResponse,
        responses={
            404: {"model": Problem, "description": "No such entity."},
            **_OFF,
            **FOREIGN_TOKEN,
        },
        tags=["knowledge"],
    )
    async def entity(
        user_id: UserIdPath,
        entity: Annotated[
            EntityName,
            Path(
                min_length=1,
                max_length=ENTITY_NAME_MAX_CHARS,
                description="A name, an alias or an entity key.",
                json_schema_extra=_NAME_SPEC,
            ),
        ],
        knowledge: Knowledge,
        parts: Parts,
        reads: After,
        limit: Annotated[int, Query(ge=1, le=200, description="Most memories to give.")] = 20,
    ) -> EntityDetailResponse:
        """One entity: its facts as a timeline and the exchanges that mention it (after the
        writes in `after`)."""
        writes = await reads.settle(parts.writes, user_id)
        detail = await knowledge.entity(user_id, entity, limit)
        if detail is None:
            raise HTTPException(status_code=404, detail=not_found("entity", writes))
        return EntityDetailResponse(
            user_id=user_id,
            entity=EntitySummary.of(detail.entity),
            timeline=[Fact.of(f, knowledge.now()) for f in detail.timeline],
            memories=[Memory.of(n) for n in detail.leaves],
            **seen(writes),
        )


__all__ = ["knowledge_routes"]
