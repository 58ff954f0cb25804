"""`GET /v1/users/{user_id}/turn-key`: the public key a producer seals the user's turns for
(`recall/turn_keys.py`; docs/forget-everywhere.md, "The turns topic")."""

# No `from __future__ import annotations`: FastAPI reads the route annotations at definition time.

import base64
from typing import Literal

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, Field

from memstream.edges.http.parts import Parts, UserIdPath
from memstream.edges.http.schemas import Problem
from memstream.recall.turn_keys import TurnKeys

USER_FORGOTTEN = "the user was forgotten: its turns cannot be sealed until its tombstone lapses"


class TurnKeyResponse(BaseModel):
    user_id: str
    public_key: str = Field(description="Base64 of the user's X25519 turn key (32 bytes).")
    envelope: Literal["sealed_turn.v1"] = Field(
        default="sealed_turn.v1", description="The envelope to seal turn.v1 values in."
    )


def turn_key_routes(router: APIRouter) -> None:
    @router.get(
        "/users/{user_id}/turn-key",
        response_model=TurnKeyResponse,
        tags=["producers"],
        responses={
            404: {"model": Problem, "description": "A user the key does not reach."},
            409: {
                "model": Problem,
                "description": "The user was forgotten, and its tombstone stands.",
            },
        },
    )
    async def turn_key(user_id: UserIdPath, parts: Parts) -> TurnKeyResponse:
        """The public key to seal the user's turns for (made with the user's data key if it
        has none yet). It opens nothing: a producer holding it can seal, never read."""
        keys: TurnKeys | None = parts.turn_keys
        if keys is None:
            raise HTTPException(status_code=501, detail="this process hands out no turn keys")
        public = await keys.public_key(user_id)
        if public is None:
            raise HTTPException(status_code=409, detail=USER_FORGOTTEN)
        return TurnKeyResponse(user_id=user_id, public_key=base64.b64encode(public).decode())
