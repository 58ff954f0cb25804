"""`memstream rebuild`: re-derive users' trees with the current backend, prompts and embedder.

It publishes one `rebuild.v1` per user on the turns topic (the workers do the work, in order
with each user's turns, at the deployment's rebuild rate) and follows the progress in Redis
with a progress bar until every rebuild is done: its leaves re-derived and the windows above
consolidated again. `--all` lists the users from the store; `--no-wait` only publishes.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Annotated

import typer

from memstream.contracts.tenant_topics import TurnsTopic, topic_of
from memstream.entrypoints.cli_audit import ActorOption, actor_of, stores_settings

if TYPE_CHECKING:
    # The rest is imported where used: the settings (pydantic-settings), the codec, the
    # domain behind the ports and asyncio were most of the time `memstream --help` took to
    # print, and no help needs them.
    from memstream.entrypoints.cli_audit import CliAudit
    from memstream.ports import Publisher, RecallReads
    from memstream.recall.rebuilds import RebuildProgress
    from memstream.settings import Settings

_LEVEL = re.compile(r"^[Ll]?([1-5])$")
# What ends the wait: a rebuild done, or one that has nothing to start from.
FINISHED = ("done", "nothing_to_do")


def parse_levels(text: str) -> list[int]:
    """ "L1..L5", "L2-L5", "1,3", "L1" -> the level numbers, sorted."""
    levels: set[int] = set()
    for part in text.replace(" ", "").split(","):
        bounds = re.split(r"\.\.|-", part)
        numbers = [_LEVEL.match(b) for b in bounds]
        if len(bounds) > 2 or not all(numbers):
            raise typer.BadParameter(f"{part!r}: levels are L1..L5 (e.g. L1..L5, L2-L5, 1,3)")
        low, high = int(numbers[0].group(1)), int(numbers[-1].group(1))  # type: ignore[union-attr]
        if low > high:
            raise typer.BadParameter(f"{part!r}: the range goes down")
        levels.update(range(low, high + 1))
    return sorted(levels)


@dataclass(frozen=True, slots=True)
class Requested:
    user_id: str
    rebuild_id: str


async def request_rebuilds(
    publisher: Publisher,
    turns_topic: TurnsTopic,
    users: Sequence[str],
    since: date | None,
    levels: Sequence[int] | None,
) -> list[Requested]:
    """One `rebuild.v1` per user, keyed by user, in one publish."""
    from memstream.contracts.codec import encode_rebuild
    from memstream.contracts.records import Outbound

    topic = topic_of(turns_topic)
    requested = [Requested(u, uuid.uuid4().hex) for u in users]
    await publisher.publish(
        [
            Outbound(
                topic(r.user_id), r.user_id, encode_rebuild(r.user_id, r.rebuild_id, since, levels)
            )
            for r in requested
        ]
    )
    return requested


async def follow(
    tree: RecallReads,
    requested: Sequence[Requested],
    on_progress: Callable[[list[RebuildProgress]], None],
    *,
    poll_s: float = 0.5,
    timeout_s: float | None = None,
) -> list[RebuildProgress]:
    """Poll every rebuild's progress until all are done (or `timeout_s` passes: TimeoutError)."""
    import asyncio

    from memstream.recall.rebuilds import rebuild_progress

    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        states = [await rebuild_progress(tree, r.user_id, r.rebuild_id) for r in requested]
        on_progress(states)
        if all(s.status in FINISHED for s in states):
            return states
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"rebuilds not done after {timeout_s} s")
        await asyncio.sleep(poll_s)


async def _with_memories(tree: RecallReads, users: Sequence[str]) -> list[str]:
    """The users that have memories; each other is named as having nothing to rebuild, at
    once: the segmenter passes over a rebuild of a user it holds nothing for."""
    from memstream.recall.rebuilds import has_memories

    kept = []
    for user_id in users:
        if await has_memories(tree, user_id):
            kept.append(user_id)
        else:
            typer.echo(
                f"{user_id}: no memories, nothing to rebuild (a lost tree: `memstream repair`)"
            )
    return kept


async def _audit_rebuilds(
    audit: CliAudit, named: Sequence[str], kept: Sequence[str], all_users: bool, outcome: str
) -> None:
    """`--all`: one record for every user at once; else one per user named (refused: it had
    nothing to rebuild, as the API answers)."""
    if all_users:
        await audit.record("users.rebuild", outcome, users=len(kept))
        return
    for user_id in named:
        await audit.record(
            "user.rebuild", outcome if user_id in kept else "refused", user_id=user_id
        )


def work_done(states: Sequence[RebuildProgress]) -> tuple[int, int]:
    """(done, total) units of work over the rebuilds: leaves re-derived and windows written."""
    total = sum(s.leaves + s.windows for s in states)
    done = sum(s.leaves_done + s.windows - s.windows_pending for s in states)
    return done, total


def rebuild(
    user: Annotated[list[str] | None, typer.Option("--user", help="A user to rebuild.")] = None,
    all_users: Annotated[bool, typer.Option("--all", help="Every user in the store.")] = False,
    since: Annotated[
        str | None, typer.Option("--from", help="Only memories ending on or after this date.")
    ] = None,
    levels: Annotated[
        str | None, typer.Option("--levels", help="Levels to re-derive, e.g. L1..L5 or L2-L5.")
    ] = None,
    wait: Annotated[bool, typer.Option(help="Follow the progress until done.")] = True,
    actor: ActorOption = None,
) -> None:
    """Re-derive users' memories from their stored messages with the current backend,
    prompts and embedder (nothing changes where nothing would). Each request is recorded
    on the audit topic."""
    if bool(user) == all_users:
        raise typer.BadParameter("name users with --user, or pass --all")
    who = actor_of(actor)
    try:
        start = date.fromisoformat(since) if since else None
    except ValueError as exc:
        raise typer.BadParameter(f"--from {since!r}: not a date (YYYY-MM-DD)") from exc
    chosen = parse_levels(levels) if levels else None
    settings = stores_settings()
    import asyncio

    asyncio.run(_run(settings, user or [], all_users, start, chosen, wait, who))


async def _run(
    settings: Settings,
    users: list[str],
    all_users: bool,
    since: date | None,
    levels: list[int] | None,
    wait: bool,
    actor: str | None = None,
) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from memstream.adapters.kafka.producer import KafkaPublisher
    from memstream.contracts.catalog import load_catalog
    from memstream.entrypoints.cli_audit import CliAudit
    from memstream.wiring.container import open_redis, redis_tree

    client = open_redis(settings)
    tree = redis_tree(client, settings)
    publisher = KafkaPublisher.for_bootstrap(settings.broker.bootstrap)
    await publisher.start()
    audit = CliAudit(publisher, settings, actor_of(actor))
    try:
        if all_users:
            users = await tree.all_users()
            # Users written before the users registry existed join it (the operator's search).
            await tree.register_users()
        named, users = users, await _with_memories(tree, users)
        shared = load_catalog(settings.broker.topic_prefix).turns.name
        turns = settings.broker.turns_routing(shared).topic_for
        try:
            requested = await request_rebuilds(publisher, turns, users, since, levels)
        except Exception:
            await _audit_rebuilds(audit, named, users, all_users, "failed")
            raise
        await _audit_rebuilds(audit, named, users, all_users, "accepted")
        typer.echo(f"rebuild requested for {len(requested)} user(s)")
        if not wait or not requested:
            return
        columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns) as bar:
            task = bar.add_task("leaves and windows", total=None)

            def show(states: list[RebuildProgress]) -> None:
                done, total = work_done(states)
                finished = sum(s.status in FINISHED for s in states)
                bar.update(
                    task,
                    completed=done,
                    total=total or None,
                    description=f"{finished}/{len(states)} users done",
                )

            await follow(tree, requested, show)
    finally:
        await publisher.stop()
        await client.aclose()
