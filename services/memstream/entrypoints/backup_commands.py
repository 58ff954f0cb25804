"""`memstream export` and `memstream import`: one user's memory to a JSON Lines file and back.

The file's format is `contracts.backup_format` (docs/export.md); the work is
`memstream.backup`. Both show a progress bar on stderr, so an export can go to stdout.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO

import typer

if TYPE_CHECKING:
    from rich.progress import Progress

    from memstream.backup.restore import Imported
    from memstream.contracts.backup_format import Record
    from memstream.settings import Settings

STDIO = "-"


def add_backup_commands(app: typer.Typer) -> None:
    """Mount `export` and `import` on the `memstream` command."""
    app.command("export")(export)
    app.command("import")(import_)


def export(
    user: Annotated[str, typer.Option("--user", help="The user whose memory to export.")],
    out: Annotated[
        str, typer.Option("--out", help="The file to write, or - for standard output.")
    ] = STDIO,
) -> None:
    """Write a user's memory (every node with its messages and derivation, its facts and
    entities, its window state) to a versioned JSON Lines file (docs/export.md)."""
    import asyncio

    settings = _settings()
    try:
        with _output(out) as stream:
            written = asyncio.run(_export(settings, user, stream))
    except LookupError as exc:
        if out != STDIO:
            Path(out).unlink(missing_ok=True)
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"exported {written} record(s) of {user!r} to {out}", err=True)


def import_(
    file: Annotated[str, typer.Argument(help="An export file, or - for standard input.")],
    user: Annotated[
        str | None, typer.Option("--user", help="Import under this user id (default: the file's).")
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Forget the user's memory first, if it has any.")
    ] = False,
) -> None:
    """Write an export file's memory back, through the workers' commits and indexing; the
    same file again changes nothing (docs/export.md)."""
    import asyncio

    from memstream.backup.restore import UserHasMemory
    from memstream.contracts.backup_format import BackupFormatError

    if file == STDIO and user is not None:
        raise typer.BadParameter("--user reads the file twice: give a file, not -")
    settings = _settings()
    try:
        imported = asyncio.run(_import(settings, file, user, replace))
    except BackupFormatError as exc:
        typer.echo(f"{file}: {exc}", err=True)
        raise typer.Exit(2) from exc
    except StoresBusy as exc:
        typer.echo(
            f"{exc}\n(with the in-process Qdrant engine, stop `memstream up` or the workers "
            "first: its files are one process's)",
            err=True,
        )
        raise typer.Exit(1) from exc
    except UserHasMemory as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from exc
    how = (
        " (replaced)" if imported.replaced else " (again: nothing new)" if imported.repeated else ""
    )
    typer.echo(
        f"imported {imported.nodes} node(s), {imported.facts} fact(s) and "
        f"{imported.expiries} deadline(s) as {imported.user_id!r}{how}",
        err=True,
    )
    if imported.not_reproduced:
        typer.echo(
            f"{imported.not_reproduced} node(s) renamed without the pipeline's id rule "
            "(docs/export.md, 'Another user id')",
            err=True,
        )
    if imported.other_embedder:
        typer.echo(
            f"{imported.other_embedder} node(s) were derived with another embedder than this "
            "deployment's: their vectors are this one's; `memstream rebuild` makes them current",
            err=True,
        )


def _settings() -> Settings:
    from memstream.settings import Settings

    settings = Settings()
    if not settings.redis.url:
        typer.echo(
            "no stores configured: set MEMSTREAM_REDIS_URL (as `memstream up` prints it)",
            err=True,
        )
        raise typer.Exit(2)
    return settings


@contextmanager
def _output(out: str) -> Iterator[TextIO]:
    if out == STDIO:
        yield sys.stdout
        return
    with open(out, "w", encoding="utf-8") as stream:
        yield stream


def _lines(file: str) -> Iterator[str]:
    if file == STDIO:
        yield from sys.stdin
        return
    with open(file, encoding="utf-8") as stream:
        yield from stream


@contextmanager
def _bar(description: str) -> Iterator[Progress]:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        bar.add_task(description, total=None)
        yield bar


async def _export(settings: Settings, user_id: str, stream: TextIO) -> int:
    """Write the user's records to `stream`; LookupError for a user with nothing stored."""
    from importlib.metadata import version

    from memstream.backup.export import export_records, has_memory, planned_counts
    from memstream.contracts.backup_format import encode_record
    from memstream.wiring.container import open_redis, redis_tree

    client = open_redis(settings)
    try:
        tree = redis_tree(client, settings)
        if not await has_memory(tree, user_id):
            raise LookupError(f"user {user_id!r} has no memory stored: nothing to export")
        counts = await planned_counts(tree, user_id)
        written = 0
        with _bar(f"export {user_id}") as bar:
            task = bar.task_ids[0]
            bar.update(task, total=sum(counts.values()) + 3)
            async for record in export_records(tree, user_id, version("memstream"), counts=counts):
                stream.write(encode_record(record))
                written += 1
                bar.advance(task)
        stream.flush()
        return written
    finally:
        await client.aclose()


async def _import(settings: Settings, file: str, user_id: str | None, replace: bool) -> Imported:
    from contextlib import AsyncExitStack

    from memstream.adapters.embedding.embedders import build_embedder
    from memstream.backup.restore import import_records
    from memstream.contracts.backup_format import Header, read_records
    from memstream.wiring.container import index_keys, open_index, open_redis, redis_tree
    from memstream.wiring.handlers import embedder_id

    def open_records() -> Iterator[Record]:
        return read_records(_lines(file))

    # A file of another format or version is refused before any store is opened.
    header = next(open_records()) if file != STDIO else None
    async with AsyncExitStack() as stack:
        # The stores and the embedder only: an import publishes nothing.
        client = open_redis(settings)
        stack.push_async_callback(client.aclose)
        embedder = build_embedder(settings)
        try:
            keys = index_keys(redis_tree(client, settings), settings)
            index = await open_index(
                settings, settings.qdrant.collection, embedder.dim, stack, keys=keys
            )
        except RuntimeError as exc:  # e.g. the in-process engine's files held by `memstream up`
            raise StoresBusy(f"cannot open the index: {exc}") from exc
        with _bar(f"import {file}") as bar:
            task = bar.task_ids[0]
            if isinstance(header, Header):
                bar.update(task, total=sum(header.counts.values()) + 1)

            def show(record: Record) -> None:
                bar.advance(task)

            return await import_records(
                open_records,
                redis_tree(client, settings),
                index,
                embedder,
                user_id=user_id,
                replace=replace,
                embedder_id=embedder_id(settings),
                on_record=show,
            )


class StoresBusy(RuntimeError):
    """The stores cannot be opened from this process."""
