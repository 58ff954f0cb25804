"""The `memstream` command. Each sub-command lives with the part it drives; this only wires them.

The production commands (worker, serve, recall, topics) load their heavy modules when they
run, so `--help` answers at once. The development tools (up, demo, ingest, eval) live in
`memstream.tools`, which only this module imports, and only inside the command that runs
one: the tool parses the rest of the command line itself, `--help` included.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import typer

from memstream.entrypoints.mcp_command import mcp
from memstream.entrypoints.process_commands import serve, worker
from memstream.entrypoints.rebuild_command import rebuild
from memstream.entrypoints.recall_command import recall
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
    from memstream.tools.embedded.commands import up as tool

    run_tool(ctx, tool)


@tool_command("demo")
def demo(ctx: typer.Context) -> None:
    """Run the pipeline on the embedded stack over a bundled conversation and show the trees."""
    from memstream.tools.commands import demo as tool

    run_tool(ctx, tool)


@tool_command("ingest")
def ingest(ctx: typer.Context) -> None:
    """Publish a file of events onto the turns topic, in order, keyed by user."""
    from memstream.tools.commands import ingest as tool

    run_tool(ctx, tool)


@tool_command("eval")
def eval_(ctx: typer.Context) -> None:
    """Benchmarks of recall quality (LoCoMo)."""
    from memstream.tools.eval.commands import eval_app

    run_tool(ctx, eval_app)
