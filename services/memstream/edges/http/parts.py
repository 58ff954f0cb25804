"""What every route of the recall API is given: the parts it calls, and the user id, checked.

The composition root builds the parts (`wiring.handlers.build_recall`); the app holds them
from start-up to shutdown and each route receives them as the `Parts` dependency.
"""

# No `from __future__ import annotations`: FastAPI reads these annotations at definition time.

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Path, Query, Request
from pydantic import AfterValidator

from memstream.edges.http.audit import AuditTrail
from memstream.edges.http.schemas import USER_ID_MAX_CHARS, USER_ID_PATTERN, valid_user_id
from memstream.recall.knowledge import KnowledgeService
from memstream.recall.opening import EnvelopeOpener
from memstream.recall.pipeline import RecallPipeline
from memstream.recall.service import MemoryService
from memstream.recall.turn_keys import TurnKeys
from memstream.recall.users import UserSearch
from memstream.recall.writes import WriteWaiter
from memstream.repair.jobs import RepairJobs

_USER_ID_SPEC = {"pattern": USER_ID_PATTERN}
UserIdPath = Annotated[
    str,
    Path(
        min_length=1,
        max_length=USER_ID_MAX_CHARS,
        description="User id.",
        json_schema_extra=_USER_ID_SPEC,
    ),
    AfterValidator(valid_user_id),
]
UserIdQuery = Annotated[
    str,
    Query(
        min_length=1,
        max_length=USER_ID_MAX_CHARS,
        description="Owner.",
        json_schema_extra=_USER_ID_SPEC,
    ),
    AfterValidator(valid_user_id),
]


@dataclass(frozen=True)
class RecallParts:
    """What the routes call: the pipeline, the service, the readiness checks by store, the
    wait for write tokens, and the knowledge reads (None while the knowledge write is off:
    its routes say so), and the operator's search across users."""

    pipeline: RecallPipeline
    service: MemoryService
    checks: Mapping[str, Callable[[], Awaitable[bool]]]
    writes: WriteWaiter
    users: UserSearch
    knowledge: KnowledgeService | None = None
    repairs: RepairJobs | None = None  # POST/GET /v1/users/{u}/repair
    audit: AuditTrail | None = None  # forgets, rebuilds, repairs, listings, key file reads
    opener: EnvelopeOpener | None = None  # POST /v1/feed:open
    turn_keys: TurnKeys | None = None  # GET /v1/users/{u}/turn-key


PartsOpener = Callable[[], AbstractAsyncContextManager[RecallParts]]


async def _parts(request: Request) -> RecallParts:
    # async: FastAPI runs a plain `def` dependency in its thread pool, a thread hop (and
    # the GIL handed back and forth) on every request for one attribute read.
    parts: RecallParts = request.app.state.parts
    return parts


Parts = Annotated[RecallParts, Depends(_parts)]
