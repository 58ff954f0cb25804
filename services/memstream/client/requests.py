"""What the recall client sends: request bodies, query parameters and paths."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote


def recall_body(
    user_id: str,
    query: str,
    query_time: datetime | None,
    complexity: str,
    max_tokens: int | None,
    with_derivation: bool = False,
    after: list[str] | None = None,
    wait_ms: int = 0,
    explain: bool = False,
) -> dict[str, Any]:
    body: dict[str, Any] = {"user_id": user_id, "query": query, "complexity": complexity}
    if explain:
        body["explain"] = True
    if after:
        body["after"] = after
        body["wait_ms"] = wait_ms
    if query_time is not None:
        body["query_time"] = query_time.isoformat()
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if with_derivation:
        body["with_derivation"] = True
    return body


def after_params(after: list[str], wait_ms: int) -> dict[str, Any]:
    """`after` and `wait_ms` as query parameters (the token repeated), when there are tokens."""
    return {"after": after, "wait_ms": wait_ms} if after else {}


def memories_params(
    level: int | None, start: datetime | None, end: datetime | None, limit: int, cursor: str | None
) -> dict[str, Any]:
    params: dict[str, Any] = {"limit": limit}
    for name, value in (("level", level), ("cursor", cursor)):
        if value is not None:
            params[name] = value
    for name, when in (("start", start), ("end", end)):
        if when is not None:
            params[name] = when.isoformat()
    return params


def facts_params(at: datetime | None, subject: str | None, history: bool) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if at is not None:
        params["at"] = at.isoformat()
    if subject is not None:
        params["subject"] = subject
    if history:
        params["history"] = "true"
    return params


def entity_path(user_id: str, name: str) -> str:
    return f"/v1/users/{user_id}/entities/{quote(name, safe='')}"
