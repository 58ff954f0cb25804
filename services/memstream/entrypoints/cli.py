"""The `memstream` command. Each sub-command lives with the part it drives; this only wires them."""

from __future__ import annotations

import typer

from memstream.entrypoints.recall_commands import recall, serve
from memstream.entrypoints.topics_commands import topics_app
from memstream.entrypoints.worker import worker
from memstream.tools.commands import demo, ingest
from memstream.tools.embedded.commands import up
from memstream.tools.eval.commands import eval_app

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
app.add_typer(topics_app, name="topics", help="Create and check the Kafka topics of the catalog.")
app.add_typer(eval_app, name="eval", help="Benchmarks of recall quality (LoCoMo).")
app.command("up")(up)
app.command("demo")(demo)
app.command("ingest")(ingest)
app.command("recall")(recall)
app.command("serve")(serve)
app.command("worker")(worker)
