"""A small stand-in for the recall API, speaking the explorer's contract (issue 35's routes:
the recall trace, user search, the overview) over a tree of one user, for browser tests of
the pages without the stores. `missing=True` leaves those three routes out, as an older
server would, so the pages can be seen falling back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import FastAPI, HTTPException, Query
from fastapi.responses import JSONResponse

from memstream.edges.http.gate import KeyRing, RequestGate
from memstream.edges.http.ui import UiHeaders, ui_router

USER = "ana"
KEY = "stub-key"
START = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)


def _node(
    ident: str,
    level: int,
    start: datetime,
    end: datetime,
    parent: str | None,
    text: str,
    sources: list[str],
) -> dict[str, Any]:
    names = {1: "segment", 2: "session", 3: "day", 4: "week", 5: "month"}
    return {
        "id": ident,
        "user_id": USER,
        "level": level,
        "level_name": names[level],
        "t_start": start.isoformat(),
        "t_end": end.isoformat(),
        "text": text,
        "source_ids": sources,
        "parent_id": parent,
        "session_id": None,
        "version": 1,
        "degraded": False,
        "score": None,
        "facts": [],
        "derivation": None,
        "valid_from": None,
        "valid_to": None,
        "superseded_by": None,
    }


def tree() -> dict[str, dict[str, Any]]:
    """A month, a week, two days with a session each, two exchanges per session."""
    nodes = [
        _node(
            "m1",
            5,
            START,
            START + timedelta(days=3),
            None,
            "Ana's March.",
            ["d1", "d2", "d3", "d4"],
        )
    ]
    nodes.append(
        _node(
            "w1",
            4,
            START,
            START + timedelta(days=3),
            "m1",
            "A week of plans.",
            ["d1", "d2", "d3", "d4"],
        )
    )
    for day in range(2):
        at = START + timedelta(days=day * 2)
        first, second = f"d{2 * day + 1}", f"d{2 * day + 2}"
        nodes.append(
            _node(f"day{day}", 3, at, at + timedelta(hours=1), "w1", f"Day {day}.", [first, second])
        )
        session = _node(
            f"s{day}",
            2,
            at,
            at + timedelta(hours=1),
            f"day{day}",
            f"Session {day}.",
            [first, second],
        )
        session["facts"] = [{"text": f"Ana said thing {day}.", "source_ids": [first]}]
        nodes.append(session)
        for i, message in enumerate((first, second)):
            t = at + timedelta(minutes=i)
            nodes.append(
                _node(f"e-{message}", 1, t, t, f"s{day}", f"Ana: message {message}", [message])
            )
    return {n["id"]: n for n in nodes}


def trace() -> dict[str, Any]:
    return {
        "plan": {
            "complexity": "hybrid",
            "keywords": ["plans"],
            "levels": [1, 2],
            "state_question": False,
            "query_time": None,
            "time_range": None,
            "entities": ["ana"],
            "top_k": 5,
            "pool": 20,
        },
        "leaves": [
            {
                "id": "e-d1",
                "level": 1,
                "t_start": START.isoformat(),
                "t_end": START.isoformat(),
                "text": "Ana: message d1",
                "dense": 0.81,
                "lexical": 0.5,
                "fused": 0.7,
                "rerank": 0.9,
                "rank": 1,
                "source": "both",
                "returned": True,
            },
            {
                "id": "e-d3",
                "level": 1,
                "t_start": START.isoformat(),
                "t_end": START.isoformat(),
                "text": "Ana: message d3",
                "dense": 0.4,
                "lexical": None,
                "fused": 0.3,
                "rerank": None,
                "rank": 2,
                "source": "dense",
                "returned": False,
            },
        ],
        "climbed": [{"id": "s0", "level": 2, "from_ids": ["e-d1"], "returned": True}],
        "dropped": [
            {"id": "e-d3", "level": 1, "stage": "gate", "reason": "below the relevance gate"}
        ],
        "facts": [],
        "tokens": 42,
        "max_tokens": 1000,
        "timings_ms": {"plan": 0.4, "search": 6.0, "rerank": 12.5, "fit": 0.3},
    }


def stub_app(*, missing: bool = False) -> FastAPI:
    nodes = tree()
    app = FastAPI()
    app.include_router(ui_router())

    @app.get("/v1/users/{user_id}/memories")
    async def memories(
        user_id: str,
        level: int | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Any:
        items = [
            n
            for n in nodes.values()
            if user_id == USER
            and (level is None or n["level"] == level)
            and (start is None or datetime.fromisoformat(n["t_end"]) >= start)
            and (end is None or datetime.fromisoformat(n["t_end"]) <= end)
        ]
        return {"user_id": user_id, "items": items, "next_cursor": None}

    @app.get("/v1/memories/{memory_id}")
    async def memory(memory_id: str, user_id: str) -> Any:
        node = nodes.get(memory_id)
        if node is None or user_id != USER:
            raise HTTPException(404, "no such memory for this user")
        ancestors, parent = [], node["parent_id"]
        while parent:
            ancestors.append(nodes[parent])
            parent = nodes[parent]["parent_id"]
        children = [n for n in nodes.values() if n["parent_id"] == memory_id]
        return {
            "memory": node,
            "children": children,
            "ancestors": ancestors,
            "source_ids": node["source_ids"],
        }

    @app.delete("/v1/users/{user_id}")
    async def forget(user_id: str) -> Any:
        forgotten = len(nodes) if user_id == USER else 0
        if user_id == USER:
            nodes.clear()
        return {
            "user_id": user_id,
            "qdrant_points": forgotten,
            "redis_keys": forgotten,
            "forget_event_published": True,
        }

    @app.post("/v1/recall")
    async def recall(body: dict[str, Any]) -> Any:
        if missing and "explain" in body:
            return JSONResponse(
                {"detail": [{"loc": ["body", "explain"], "msg": "Extra inputs are not permitted"}]},
                422,
            )
        result = {
            "user_id": USER,
            "complexity": "hybrid",
            "keywords": ["plans"],
            "memories": [nodes["e-d1"] | {"score": 0.9}],
            "facts": [],
            "tokens": 42,
            "timings_ms": {"search": 6.0},
            "degraded": False,
        }
        return result | ({"trace": trace()} if body.get("explain") else {})

    if not missing:

        @app.get("/v1/users")
        async def users(prefix: str = "", limit: int = Query(50), cursor: str | None = None) -> Any:
            everyone = [f"{USER}"] + [f"user-{i:02d}" for i in range(30)]
            chosen = [
                u for u in everyone if u.startswith(prefix) and (cursor is None or u > cursor)
            ]
            page = chosen[:limit]
            items = [{"user_id": u, "last_seen": START.isoformat(), "memories": 3} for u in page]
            return {"items": items, "next_cursor": page[-1] if len(chosen) > limit else None}

        @app.get("/v1/users/{user_id}/overview")
        async def overview(user_id: str) -> Any:
            if user_id != USER or not nodes:
                raise HTTPException(404, "no such user")
            counts = {
                str(level): sum(n["level"] == level for n in nodes.values())
                for level in range(1, 6)
            }
            return {
                "user_id": USER,
                "counts": counts,
                "first_at": START.isoformat(),
                "last_at": (START + timedelta(days=3)).isoformat(),
                "last_written_at": START.isoformat(),
                "pending_windows": [{"level": 4, "start": START.isoformat(), "end": None}],
                "degraded": 0,
            }

    app.add_middleware(RequestGate, max_body_bytes=65536, keys=KeyRing([KEY]))
    app.add_middleware(UiHeaders)
    return app
