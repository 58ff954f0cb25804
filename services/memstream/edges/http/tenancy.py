"""Which users a request reaches: the caller the gate identified, checked against every user
id the request names.

A tenant key names users of its own namespace only (`domain.tenancy`). A user id outside it
answers 404 `no such user`, decided from the id alone, before any store is read: the answer
and its timing are the same whether that user exists or not, so a key cannot probe for the
users of other tenants.
"""

# No `from __future__ import annotations`: FastAPI reads these annotations at definition time.

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request

from memstream.domain.tenancy import Caller, KeyTable
from memstream.edges.http.audit import SYSTEM, AuditTrail, audit_record
from memstream.edges.http.gate import ANONYMOUS, CALLER_STATE, KeyRing
from memstream.edges.http.key_file import KeyFileWatcher, ReloadObserver
from memstream.edges.http.rate_limits import TenantRateLimits
from memstream.metrics import Metrics
from memstream.settings import Settings

NO_SUCH_USER = "no such user"


def caller_of(request: Request) -> Caller:
    """The caller of this request (the gate put it in the scope's state)."""
    caller = getattr(request.state, CALLER_STATE, None)
    return caller if isinstance(caller, Caller) else ANONYMOUS


def refuse_unreachable(caller: Caller, user_id: str) -> None:
    if not caller.reaches(user_id):
        raise HTTPException(status_code=404, detail=NO_SUCH_USER)


async def within_reach(request: Request) -> Caller:
    caller = caller_of(request)
    for user_id in (request.path_params.get("user_id"), request.query_params.get("user_id")):
        if user_id is not None:
            refuse_unreachable(caller, user_id)
    return caller


# A dependency of every /v1 route; routes with a user id in their body check it themselves.
WithinReach = Annotated[Caller, Depends(within_reach)]


class Tenancy:
    """The API's keys, the key file's watcher and the tenants' rate limits, built once."""

    def __init__(self, settings: Settings, metrics: Metrics | None) -> None:
        api = settings.api
        self.keys = KeyRing(
            [key.get_secret_value() for key in api.required_keys()],
            key_file=api.key_file is not None,
        )
        self._metrics = metrics
        self._observers: list[ReloadObserver] = []
        self._pending: set[asyncio.Task[None]] = set()
        self.rate_limits = (
            TenantRateLimits(api.tenant_rate_per_s, api.tenant_burst, on_limited=self._limited)
            if api.tenant_rate_per_s > 0
            else None
        )
        self.watcher = (
            KeyFileWatcher(Path(api.key_file), self.keys, self._reloaded)
            if api.key_file is not None
            else None
        )
        self.poll_s = api.key_file_poll_s

    @contextmanager
    def observed(self, observer: ReloadObserver) -> Iterator[None]:
        """Tell `observer` of every reload while in the block (the audit trail)."""
        self._observers.append(observer)
        try:
            yield
        finally:
            self._observers.remove(observer)

    def track(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` (an audit record's publishing) beside the requests."""
        task = asyncio.ensure_future(work)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def settled(self) -> None:
        """Once what `track` started has ended (at shutdown; tests)."""
        if self._pending:
            await asyncio.wait(set(self._pending), timeout=10)

    def _reloaded(self, outcome: str, table: KeyTable | None) -> None:
        if self._metrics is not None:
            self._metrics.key_file_reloads.labels(outcome).inc()
        if table is not None and self.rate_limits is not None:
            self.rate_limits.forget_tenants_except(table.tenants)
        for observer in list(self._observers):
            observer(outcome, table)

    def _limited(self, tenant: str) -> None:
        if self._metrics is not None:
            self._metrics.tenant_rate_limited.labels(tenant).inc()


@asynccontextmanager
async def audited_key_reads(tenancy: Tenancy, trail: AuditTrail | None) -> AsyncIterator[None]:
    """While in the block: the key file is watched, and its reads are on the audit trail
    (the start-up's read first)."""
    if tenancy.watcher is None:
        yield
        return

    def record(outcome: str, table: KeyTable | None) -> None:
        if trail is not None:
            done = "refused" if table is None else "done"
            tenancy.track(trail.record(audit_record(SYSTEM, f"keys.{outcome}", done, keys=table)))

    record("loaded", tenancy.keys.table)
    watching = asyncio.ensure_future(tenancy.watcher.run(tenancy.poll_s))
    try:
        with tenancy.observed(record):
            yield
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
        await tenancy.settled()
