"""`memstream eval locomo` (LoCoMo against flat baselines) and `memstream eval knowledge` (the
knowledge-update set: is what is true now, or was then, recalled first)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from memstream.settings import Settings
from memstream_lab.eval.curve import parse_budgets
from memstream_lab.eval.harness import EvalConfig, run_locomo
from memstream_lab.eval.knowledge import report as knowledge_report
from memstream_lab.eval.knowledge.harness import GOLD, READERS, KnowledgeConfig, run_knowledge
from memstream_lab.eval.report import PLOT_PNG, RESULTS_JSON, RESULTS_MD, markdown
from memstream_lab.knowledge.dataset import ids_in
from memstream_lab.locomo import locomo_data_dir

eval_app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Benchmarks of recall quality (LoCoMo, knowledge updates).",
)


@eval_app.callback()
def _group() -> None:
    """Benchmarks of recall quality (a callback keeps `locomo` a sub-command of `eval`)."""


def _names(value: str | None) -> tuple[str, ...] | None:
    return tuple(n.strip() for n in value.split(",") if n.strip()) if value else None


# The options both evaluations take alike.
MaxQuestions = Annotated[
    int | None,
    typer.Option("--max-questions", min=1, help="First N questions of each conversation."),
]


@eval_app.command("locomo")
def locomo(
    out: Annotated[Path, typer.Option("--out", help="Run directory (stores, records, results).")],
    data: Annotated[
        Path | None, typer.Option("--data", help="LoCoMo directory; default ../shared/data/locomo.")
    ] = None,
    conversations: Annotated[
        int | None, typer.Option("--conversations", min=1, help="Use the first N files.")
    ] = None,
    max_questions: MaxQuestions = None,
    resume: Annotated[
        bool, typer.Option("--resume/--no-resume", help="Keep what an earlier run in OUT did.")
    ] = True,
    variants: Annotated[
        str | None, typer.Option("--variants", help="Comma-separated memstream variants.")
    ] = None,
    baselines: Annotated[bool, typer.Option("--baselines/--no-baselines")] = True,
    mem0: Annotated[bool, typer.Option("--mem0/--no-mem0", help="Run mem0 if installed.")] = True,
    answer: Annotated[
        bool, typer.Option("--answer/--no-answer", help="Answer and judge (needs an endpoint).")
    ] = True,
    answer_methods: Annotated[
        str | None, typer.Option("--answer-methods", help="Comma-separated methods to answer.")
    ] = None,
    memory_llm: Annotated[
        bool,
        typer.Option(
            "--memory-llm/--offline-memory",
            help="Write memories (and plan/gate recall) with the LLM endpoint too.",
        ),
    ] = False,
    budgets: Annotated[
        str | None,
        typer.Option(
            "--budgets",
            help="Token curve: comma-separated ceilings (e.g. 600,1500,4000) at which the "
            "default variant and every flat baseline also run; none by default.",
        ),
    ] = None,
) -> None:
    """Ingest LoCoMo through the pipeline, recall every question, compare with baselines."""
    try:
        ceilings = parse_budgets(budgets) if budgets is not None else ()
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--budgets") from exc
    config = EvalConfig(
        data_dir=data or locomo_data_dir(),
        out_dir=out,
        conversations=conversations,
        max_questions=max_questions,
        resume=resume,
        variants=_names(variants),
        baselines=baselines,
        mem0=mem0,
        answer=answer,
        answer_methods=_names(answer_methods),
        memory_llm=memory_llm,
        budgets=ceilings,
    )
    console = Console(stderr=True)
    report = asyncio.run(run_locomo(config, Settings(), console))
    typer.echo(markdown(report))
    for name in (RESULTS_JSON, RESULTS_MD, PLOT_PNG):
        console.print(f"wrote {out / name}")


@eval_app.command("knowledge")
def knowledge(
    out: Annotated[Path, typer.Option("--out", help="Run directory (stack, results).")],
    conversations: Annotated[
        int | None, typer.Option("--conversations", min=1, help="Use the first N conversations.")
    ] = None,
    only: Annotated[
        str | None,
        typer.Option(
            "--only",
            help="Only these conversations: ids and ranges, e.g. ku35-ku44 (the split written "
            "blind to the extraction rules) or ku01,ku03; default all.",
        ),
    ] = None,
    max_questions: MaxQuestions = None,
    resume: Annotated[
        bool, typer.Option("--resume/--no-resume", help="Keep what an earlier run in OUT ingested.")
    ] = True,
    baselines: Annotated[bool, typer.Option("--baselines/--no-baselines")] = True,
    reader: Annotated[
        str,
        typer.Option(
            "--reader",
            help="Who reads each L1's facts: backend (the deployment's) or gold (the set's "
            "own annotations through the LLM backend's output path: what the rest of the "
            "pipeline does with a perfect reader).",
        ),
    ] = "backend",
    memory_llm: Annotated[
        bool,
        typer.Option(
            "--memory-llm/--offline-memory",
            help="Write memories and read facts with the LLM endpoint (MEMSTREAM_LLM_BASE_URL), "
            "recall planning and gating with it too; a resumed run keeps what was ingested.",
        ),
    ] = False,
) -> None:
    """Publish the knowledge-update set through the pipeline, ask every question, score it."""
    if reader not in READERS:
        raise typer.BadParameter(f"one of {', '.join(READERS)}", param_hint="--reader")
    if reader == GOLD and memory_llm:
        # The gold reader stands in for the endpoint's reading: one or the other.
        raise typer.BadParameter(
            "the gold reader reads the facts itself", param_hint="--memory-llm"
        )
    try:
        chosen = ids_in(only) if only is not None else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--only") from exc
    config = KnowledgeConfig(
        out_dir=out,
        conversations=conversations,
        only=chosen,
        max_questions=max_questions,
        resume=resume,
        baselines=baselines,
        reader=reader,
        memory_llm=memory_llm,
    )
    console = Console(stderr=True)
    report = asyncio.run(run_knowledge(config, Settings(), console))
    typer.echo(knowledge_report.markdown(report, questions=False))
    for name in (knowledge_report.RESULTS_JSON, knowledge_report.RESULTS_MD):
        console.print(f"wrote {out / name}")


if __name__ == "__main__":  # `python -m memstream_lab.eval.commands locomo ...` before cli wiring
    eval_app()
