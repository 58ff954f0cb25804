"""The `memstream` command. Each sub-command lives with the part it drives; this only wires them.

The production commands (worker, serve, recall, topics) load their heavy modules when they
run, so `--help` answers at once. The commands of one machine (up, demo, ingest) live in
`memstream.entrypoints.embedded` and load inside the command that runs one: the tool parses
the rest of the command line itself, `--help` included.

Other distributions add commands through the `memstream.commands` entry-point group: the lab
(lab/pyproject.toml) adds `eval` and `bench`. memstream never imports the lab; without it
installed, those commands are simply absent.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import typer

from memstream.entrypoints.backup_commands import add_backup_commands
from memstream.entrypoints.mcp_command import mcp
from memstream.entrypoints.process_commands import serve, worker
from memstream.entrypoints.rebuild_command import rebuild
from memstream.entrypoints.recall_command import recall
from memstream.entrypoints.repair_command import repair
from memstream.entrypoints.topics_commands import topics_app

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="memstream: a streaming memory layer for conversational agents.",
)
app.add_typer(topics_app, name="topics", help="Create and check the Kafka topics of the catalog.")
app.command("worker")(worker)
app.command("serve")(serve)
app.command("recall")(recall)
app.command("mcp")(mcp)
app.command("rebuild")(rebuild)
add_backup_commands(app)
app.command("repair")(repair)

# A tool gets the rest of the command line untouched, options and `--help` included.
tool_command = functools.partial(
    app.command,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)


def run_tool(ctx: typer.Context, tool: typer.Typer | Callable[..., Any]) -> None:
    """Run a tool's own command line (a Typer app, or a function as its only command)."""
    if not isinstance(tool, typer.Typer):
        single = typer.Typer(add_completion=False)
        single.command()(tool)
        tool = single
    tool(args=ctx.args, prog_name=ctx.command_path)


@tool_command("up")
def up(ctx: typer.Context) -> None:
    """Run memstream here: a broker, Redis and Qdrant for each part not configured."""
    from memstream.entrypoints.embedded.commands import up as tool

    run_tool(ctx, tool)


@tool_command("demo")
def demo(ctx: typer.Context) -> None:
    """Run the pipeline on the embedded stack over a bundled conversation and show the trees."""
    from memstream.entrypoints.embedded.feed_commands import demo as tool

    run_tool(ctx, tool)


@tool_command("ingest")
def ingest(ctx: typer.Context) -> None:
    """Publish a file of events onto the turns topic, in order, keyed by user."""
    from memstream.entrypoints.embedded.feed_commands import ingest as tool

    run_tool(ctx, tool)


COMMAND_GROUP = "memstream.commands"
"""Entry points of this group name a callable taking the rest of the command line and the
program name (`memstream_lab.commands.eval_command` for one)."""

InstalledCommand = Callable[[Sequence[str], str], None]


def installed_commands() -> list[EntryPoint]:
    """The commands other installed distributions declare (the lab's `eval` and `bench`)."""
    return sorted(entry_points(group=COMMAND_GROUP), key=lambda entry: entry.name)


def mount(entry: EntryPoint) -> None:
    """Add an installed command without importing it: listing commands reads only metadata."""
    origin = entry.dist.name if entry.dist is not None else "another distribution"

    @tool_command(entry.name, help=f"From {origin}: see `memstream {entry.name} --help`.")
    def run(ctx: typer.Context) -> None:
        command: InstalledCommand = entry.load()
        command(ctx.args, ctx.command_path)


for _entry in installed_commands():
    mount(_entry)
