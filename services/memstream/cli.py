"""The `memstream` command. Each sub-command lives with the part it drives; this only wires them."""

from __future__ import annotations

import typer

from memstream.embedded.commands import up
from memstream.eval.commands import eval_app
from memstream.recall.commands import recall, serve
from memstream.run_commands import demo, ingest
from memstream.topics_cli import topics_app
from memstream.worker_commands import worker

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
app.add_typer(topics_app, name="topics", help="Create and check the Kafka topics of the catalog.")
app.add_typer(eval_app, name="eval", help="Benchmarks of recall quality (LoCoMo).")
app.command("up")(up)
app.command("demo")(demo)
app.command("ingest")(ingest)
app.command("recall")(recall)
app.command("serve")(serve)
app.command("worker")(worker)
