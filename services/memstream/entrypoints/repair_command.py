"""`memstream repair`: write a lost store again from the other (docs/repair.md).

It connects to Redis and Qdrant as the settings name them and repairs each user in turn
(`memstream.repair.restore`), with a progress bar: the index from the tree, then the tree
from the index. `--all` takes the users of both stores, so that after a lost Redis the users
come from the index. Run it again after an interruption: it resumes, writing only what is
still missing.

With Qdrant's in-process engine (the embedded stack, no MEMSTREAM_QDRANT_URL) one process
owns the index directory: stop `memstream up` first, or repair through its API
(`POST /v1/users/{user}/repair`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from memstream.entrypoints.cli_audit import ActorOption, actor_of, stores_settings

if TYPE_CHECKING:
    from memstream.entrypoints.cli_audit import CliAudit
    from memstream.repair.restore import RepairProgress
    from memstream.settings import Settings


def repair(
    user: Annotated[list[str] | None, typer.Option("--user", help="A user to repair.")] = None,
    all_users: Annotated[
        bool, typer.Option("--all", help="Every user of the tree or of the index.")
    ] = False,
    actor: ActorOption = None,
) -> None:
    """Write the index again from the tree, and the tree from the index, where either lost
    nodes (nothing is derived again, no version changes). Each repair is recorded on the
    audit topic."""
    if bool(user) == all_users:
        raise typer.BadParameter("name users with --user, or pass --all")
    who = actor_of(actor)
    settings = stores_settings()
    from memstream import faults

    faults.arm(settings.handoff.fault_point)  # off unless a test set MEMSTREAM_FAULT_POINT
    import asyncio

    try:
        reports = asyncio.run(run_repair(settings, user or [], all_users, actor=who))
    except Exception as exc:
        # qdrant-edge refuses a second open of a shard by its write-ahead log's lock.
        if settings.qdrant.url or "WAL" not in str(exc):
            raise
        typer.echo(
            "the index directory is open in another process (`memstream up`?): stop it and "
            "run this again, or repair through its API: POST /v1/users/{user}/repair",
            err=True,
        )
        raise typer.Exit(2) from exc
    indexed = sum(r.indexed for r in reports)
    restored = sum(r.restored for r in reports)
    typer.echo(
        f"repaired {len(reports)} user(s): {indexed} point(s) indexed, "
        f"{restored} node(s) written back to the tree"
    )


async def run_repair(
    settings: Settings,
    users: list[str],
    all_users: bool,
    *,
    show: bool = True,
    actor: str | None = None,
) -> list[RepairProgress]:
    """Repair `users` (or every user), each on the audit trail: `--all` as one record."""
    from memstream.entrypoints.cli_audit import CliAudit

    async with CliAudit.opened(settings, actor_of(actor)) as audit:
        return await _repair_audited(settings, users, all_users, audit, show)


async def _repair_audited(
    settings: Settings, users: list[str], all_users: bool, audit: CliAudit, show: bool
) -> list[RepairProgress]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from memstream.bootstrap import build_repair, connect

    async with connect(settings, producer=False) as container:
        repairer = build_repair(container)
        if all_users:
            users = await repairer.users()
        columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        reports = []
        with Progress(*columns, disable=not show) as bar:
            task = bar.add_task("nodes", total=None)
            for number, user_id in enumerate(users, 1):

                def shown(p: RepairProgress, number: int = number) -> None:
                    bar.update(
                        task,
                        completed=p.looked_at,
                        total=p.nodes or None,
                        description=f"user {number}/{len(users)} {p.user_id}",
                    )

                try:
                    reports.append(await repairer.repair(user_id, shown))
                except Exception:
                    await _audit_repair(audit, user_id, all_users, len(users), "failed")
                    raise
                if not all_users:
                    await audit.record("user.repair", "done", user_id=user_id)
        if all_users:
            await audit.record("users.repair", "done", users=len(users))
        return reports


async def _audit_repair(
    audit: CliAudit, user_id: str, all_users: bool, users: int, outcome: str
) -> None:
    if all_users:
        await audit.record("users.repair", outcome, users=users)
    else:
        await audit.record("user.repair", outcome, user_id=user_id)
