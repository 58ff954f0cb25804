"""The audit trail of the `memstream` command: what it does to users goes on the audit topic,
as what the API does (`edges/http/audit.py`; docs/tenants.md, "The audit trail").

The command runs with the operator's stores and broker, so no key names who asked: the
actor is the `--actor` given (a name, a ticket: what the deployment's audit policy wants),
else the OS user that runs the command, by its user id (not `$USER`, which the caller sets
at will). Records say `origin: cli`. A record that cannot be published is reported on
stderr; the operation is not undone, as with the API.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from memstream.ports import Publisher
    from memstream.settings import Settings

ACTOR = re.compile(r"^[A-Za-z0-9._-]{1,64}$")  # the audit schema's `actor`
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9._-]")

ActorOption = Annotated[
    str | None,
    typer.Option(
        "--actor",
        help="Who asks, for the audit trail (default: the OS user running the command).",
    ),
]


def os_user() -> str:
    """The name of the OS user running this process, as the audit schema allows it."""
    uid = os.getuid()
    try:
        import pwd

        name = pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):  # no passwd entry (an arbitrary uid in a container)
        return f"uid-{uid}"
    return _NOT_ALLOWED.sub("-", name)[:64] or f"uid-{uid}"


def actor_of(given: str | None) -> str:
    """`--actor` if given (checked), else the OS user."""
    if given is None:
        return os_user()
    if not ACTOR.match(given):
        raise typer.BadParameter("--actor: 1 to 64 of A-Z a-z 0-9 . _ -")
    return given


def stores_settings() -> Settings:
    """The settings of the stores and broker an audited command works on; the command exits
    (2) with what to set when they name none."""
    from memstream.settings import Settings

    settings = Settings()
    if not settings.redis.url or not settings.broker.bootstrap:
        typer.echo(
            "no stores configured: set MEMSTREAM_REDIS_URL and MEMSTREAM_KAFKA_BOOTSTRAP "
            "(as `memstream up` prints them)",
            err=True,
        )
        raise typer.Exit(2)
    return settings


class CliAudit:
    """Writes the command's records on the audit topic: through the command's own running
    `publisher`, or through one connected at the first record (`opened`)."""

    def __init__(
        self,
        publisher: Publisher | None,
        settings: Settings,
        actor: str,
        connect: Callable[[], Awaitable[Publisher]] | None = None,
    ) -> None:
        from memstream.contracts.catalog import load_catalog

        self._publisher = publisher
        self._connect = connect
        self._topic = load_catalog(settings.broker.topic_prefix).audit.name
        self.actor = actor

    @classmethod
    @asynccontextmanager
    async def opened(cls, settings: Settings, actor: str) -> AsyncIterator[CliAudit]:
        """A trail that connects to the broker at its first record: a command that needs no
        broker for its work (a repair) does it even while the broker is down, and says on
        stderr what could not be recorded."""
        from memstream.adapters.kafka.producer import KafkaPublisher

        connected: list[KafkaPublisher] = []

        async def connect() -> Publisher:
            publisher = KafkaPublisher.for_bootstrap(settings.broker.bootstrap)
            try:
                await publisher.start()
            except BaseException:
                await publisher.stop()  # the client it made, closed
                raise
            connected.append(publisher)
            return publisher

        try:
            yield cls(None, settings, actor, connect)
        finally:
            for publisher in connected:
                await publisher.stop()

    async def record(
        self, action: str, outcome: str, *, user_id: str | None = None, users: int | None = None
    ) -> None:
        from memstream.contracts.records import Outbound
        from memstream.domain.tenancy import Caller
        from memstream.edges.http.audit import audit_record

        value = audit_record(
            Caller(self.actor), action, outcome, user_id=user_id, origin="cli", users=users
        )
        try:
            if self._publisher is None and self._connect is not None:
                connect, self._connect = self._connect, None  # one attempt per command
                self._publisher = await connect()
            if self._publisher is None:
                raise RuntimeError("no connection to the broker")
            await self._publisher.publish([Outbound(self._topic, "-", value)])
        except Exception as exc:
            typer.echo(f"audit record of {action} not published: {exc!r}", err=True)


# The commands a file fed to `memstream ingest` may carry, as the API names them.
COMMAND_ACTIONS = {"forget.v1": "user.forget", "rebuild.v1": "user.rebuild"}


def command_action(event: dict[str, Any]) -> str | None:
    """The audit action of an input event that is a command on a user, else None."""
    if event.get("type") == "forget.v1" and event.get("message_ids"):
        return "messages.forget"
    return COMMAND_ACTIONS.get(str(event.get("type")))


async def audit_commands(settings: Settings, actor: str, commands: list[tuple[str, str]]) -> None:
    """Record each (action, user) published for the workers, as `accepted`."""
    async with CliAudit.opened(settings, actor) as audit:
        for action, user_id in commands:
            await audit.record(action, "accepted", user_id=user_id)
