"""Repairing a user's stores through the API (`memstream.repair.jobs`): POST starts the
repair in this process and answers with a handle; GET the handle for its progress or, when
no repair runs here, whether the tree and the index now agree for the user."""

# No `from __future__ import annotations`: FastAPI reads the route annotations at definition time.

from typing import Any, Literal

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, Field

from memstream.edges.http.parts import Parts, RecallParts, UserIdPath
from memstream.edges.http.schemas import Problem
from memstream.repair.jobs import RepairJobs, RepairStatus

_UNKNOWN = "neither the tree nor the index holds anything of this user: nothing to repair"


class RepairState(BaseModel):
    user_id: str
    status: Literal["running", "done", "needed"] = Field(
        description="running: a repair runs in the process that answered; done: the tree and "
        "the index hold as many nodes per level; needed: they differ (POST to repair)."
    )
    handle: str = Field(description="GET it for the repair's progress.")
    tree: dict[str, int] = Field(description="Nodes per level in the tree (Redis).")
    index: dict[str, int] = Field(description="Points per level in the index (Qdrant).")
    nodes: int = Field(0, description="While running: nodes to look at, in both stores.")
    looked_at: int = 0
    indexed: int = Field(0, description="While running: points written again so far.")
    restored: int = Field(0, description="While running: nodes written back to the tree.")


def _jobs(parts: RecallParts) -> RepairJobs:
    if parts.repairs is None:
        raise HTTPException(status_code=501, detail="repairs are not served by this process")
    return parts.repairs


def _state(user_id: str, found: RepairStatus) -> RepairState:
    if found.status == "unknown_user":
        raise HTTPException(status_code=404, detail=_UNKNOWN)
    p = found.progress
    return RepairState(
        user_id=user_id,
        status=found.status,
        handle=f"/v1/users/{user_id}/repair",
        tree={f"L{lv}": n for lv, n in found.tree.items()},
        index={f"L{lv}": n for lv, n in found.index.items()},
        nodes=p.nodes if p else 0,
        looked_at=p.looked_at if p else 0,
        indexed=p.indexed if p else 0,
        restored=p.restored if p else 0,
    )


def repair_routes(router: APIRouter) -> None:
    unknown: dict[int | str, dict[str, Any]] = {
        404: {"model": Problem, "description": "Neither store knows the user."}
    }

    @router.post(
        "/users/{user_id}/repair",
        status_code=202,
        response_model=RepairState,
        responses=unknown,
        tags=["memories"],
    )
    async def repair(user_id: UserIdPath, parts: Parts) -> RepairState:
        """Write the user's index again from its tree and its tree from its index where either
        lost nodes (nothing derived again, no version changes); idempotent."""
        return _state(user_id, await _jobs(parts).start(user_id))

    @router.get(
        "/users/{user_id}/repair",
        response_model=RepairState,
        responses=unknown,
        tags=["memories"],
    )
    async def repair_status(user_id: UserIdPath, parts: Parts) -> RepairState:
        """running (with its progress), done (the stores agree) or needed."""
        return _state(user_id, await _jobs(parts).status(user_id))
