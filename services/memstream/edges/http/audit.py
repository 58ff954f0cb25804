"""The audit trail: every operation that removes, re-derives or repairs memories, every
listing of users and every read of the key file, published on the audit topic.

A record names who (the key's id, never the key), the tenant, what, the user it named, when
and how it ended; the topic's schema (`topics/memstream.audit.v1.json`) has no field that
could hold memory text. `AuditedOperations` records the API's operations after they answer,
from the route that served them, so a new route of a listed kind cannot forget to.
A record that cannot be published is logged and counted; the operation is not undone.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, MutableMapping
from datetime import UTC, datetime
from typing import Any

from memstream.contracts.records import Outbound
from memstream.domain.tenancy import Caller, KeyTable
from memstream.edges.http.gate import ANONYMOUS, CALLER_STATE, Asgi, Message, Receive, Send
from memstream.ports import Publisher

log = logging.getLogger(__name__)

# The API's own actor, for what no key asked (a key file read).
SYSTEM = Caller("memstream")
# (method, route template) -> action
AUDITED_ROUTES = {
    ("DELETE", "/v1/users/{user_id}"): "user.forget",
    ("DELETE", "/v1/users/{user_id}/messages/{message_id}"): "messages.forget",
    ("POST", "/v1/users/{user_id}/messages:forget"): "messages.forget",
    ("POST", "/v1/users/{user_id}/rebuild"): "user.rebuild",
    ("POST", "/v1/users/{user_id}/repair"): "user.repair",
    ("GET", "/v1/users"): "users.list",
}


def outcome_of(status: int) -> str:
    if status >= 500:
        return "failed"
    if status >= 400:
        return "refused"
    return "accepted" if status == 202 else "done"


def audit_record(
    caller: Caller,
    action: str,
    outcome: str,
    *,
    user_id: str | None = None,
    status: int | None = None,
    keys: KeyTable | None = None,
    origin: str = "api",
    users: int | None = None,
) -> dict[str, Any]:
    return {
        "type": "audit.v1",
        "audit_id": uuid.uuid4().hex,
        "at": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "actor": caller.key_id,
        "tenant": caller.tenant,
        "action": action,
        "user_id": user_id,
        "outcome": outcome,
        "status": status,
        "keys": len(keys.callers) if keys is not None else None,
        "tenants": len(keys.tenants) if keys is not None else None,
        "origin": origin,
        "users": users,
    }


class AuditTrail:
    def __init__(
        self, publisher: Publisher, topic: str, on_failure: Callable[[], None] | None = None
    ) -> None:
        self._publisher = publisher
        self._topic = topic
        self._on_failure = on_failure

    async def record(self, record: dict[str, Any]) -> None:
        try:
            await self._publisher.publish([Outbound(self._topic, record["tenant"] or "-", record)])
        except Exception as exc:
            log.error("audit record of %s not published: %r", record["action"], exc)
            if self._on_failure is not None:
                self._on_failure()


TrailOf = Callable[[], AuditTrail | None]  # the trail, once the app's parts are open


class AuditedOperations:
    """ASGI middleware recording the operations of `AUDITED_ROUTES` on the trail."""

    def __init__(self, app: Asgi, *, trail: TrailOf) -> None:
        self._app = app
        self._trail = trail

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        answered: dict[str, int] = {}

        async def noting_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                answered["status"] = int(message["status"])
            await send(message)

        try:
            await self._app(scope, receive, noting_send)
        finally:
            await self._record(scope, answered.get("status", 500))

    async def _record(self, scope: MutableMapping[str, Any], status: int) -> None:
        route = getattr(scope.get("route"), "path", None)
        action = AUDITED_ROUTES.get((scope.get("method", ""), route or ""))
        trail = self._trail()
        if action is None or trail is None:
            return
        caller = scope.get("state", {}).get(CALLER_STATE) or ANONYMOUS
        user_id = (scope.get("path_params") or {}).get("user_id")
        record = audit_record(caller, action, outcome_of(status), user_id=user_id, status=status)
        await trail.record(record)
