"""The knowledge-update set through the real pipeline: publish, consolidate, ask, score.

    report = await run_knowledge(KnowledgeConfig(out_dir=...), Settings())

Every conversation's turns go out as `dataset.turn_events` gives them (late sessions after
newer ones), each session closed as a producer closes it, onto the embedded stack's turns
topic, through the LoCoMo harness's ingestion (`eval.ingestion`: replay clock, workers in
this process, wait until every window is consolidated). Then every method
(`methods.default_methods`, or the caller's `methods`) answers every question, and
`score.evaluate` judges the answers. A method that cannot run is reported with its reason.

The run directory holds the stack's data (`stack/`), the ingest marker and `results.json`
/ `results.md`. Running again in it resumes: users the stores already hold completely are
not published again (asking is quick and is always done again). `resume=False` starts from
nothing.
"""

from __future__ import annotations

import os
import platform
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry
from rich.console import Console
from rich.progress import Progress

from memstream.bootstrap import Container, connect
from memstream.entrypoints.embedded.stack import EmbeddedStack
from memstream.metrics import Metrics
from memstream.settings import Settings
from memstream_lab.eval.harness import STACK_DIR, stack_settings
from memstream_lab.eval.ingestion import (
    EVENTS_FILE,
    MARKER_FILE,
    ingest_events,
    missing_users,
    open_deployment,
)
from memstream_lab.eval.knowledge.gold_reader import gold_container
from memstream_lab.eval.knowledge.methods import KnowledgeMethod, Ranked, asked_at, default_methods
from memstream_lab.eval.knowledge.report import (
    RESULTS_JSON,
    RESULTS_MD,
    KnowledgeReport,
    MethodOutcome,
    QuestionRecord,
    record,
    write_report,
)
from memstream_lab.eval.llm_usage import llm_usage
from memstream_lab.knowledge.dataset import (
    DATA_DIR,
    Conversation,
    evaluate,
    load_all,
    question_for_scoring,
    set_size,
    turn_events,
)
from memstream_lab.knowledge.score import score_question

MethodsFor = Callable[[Container], Sequence[KnowledgeMethod]]
READERS = ("backend", "gold")
GOLD = "gold"


@dataclass(frozen=True)
class KnowledgeConfig:
    out_dir: Path
    data_dir: Path = DATA_DIR
    conversations: int | None = None  # the first N conversations, in id order
    only: tuple[str, ...] | None = None  # these conversation ids (`dataset.ids_in`), before N
    max_questions: int | None = None  # the first N questions of each conversation
    resume: bool = True
    baselines: bool = True
    # Who reads each L1's facts: the deployment's backend, or "gold": the set's own
    # annotations through the LLM backend's output path (`gold_reader`), a ceiling.
    reader: str = "backend"
    # Write memories and read facts with `settings.llm`'s endpoint (recall plans and gates
    # with it too); off, the offline backend writes whatever the environment names.
    memory_llm: bool = False


def select(
    conversations: Sequence[Conversation],
    count: int | None,
    max_questions: int | None,
    only: Sequence[str] | None = None,
) -> list[Conversation]:
    """The first `count` conversations (of those named in `only`, if given), each with its
    first `max_questions` questions. An id the set does not hold is an error, so that a typo
    never runs a smaller set than asked."""
    if only is not None:
        wanted = set(only)
        unknown = wanted - {c["conversation_id"] for c in conversations}
        if unknown:
            raise ValueError(f"the set holds no conversation {', '.join(sorted(unknown))}")
        conversations = [c for c in conversations if c["conversation_id"] in wanted]
    return [{**c, "questions": c["questions"][:max_questions]} for c in conversations[:count]]


async def run_knowledge(
    config: KnowledgeConfig,
    settings: Settings,
    console: Console | None = None,
    methods: MethodsFor | None = None,
) -> KnowledgeReport:
    console = console or Console(stderr=True)
    started = time.perf_counter()
    # Chosen first: an unknown id stops the run before an earlier one's results are cleared.
    chosen = select(
        load_all(config.data_dir), config.conversations, config.max_questions, config.only
    )
    out = config.out_dir.resolve()
    if not config.resume:
        _clear(out)
    out.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}
    embedded = stack_settings(out, settings, memory_llm=config.memory_llm)
    # With an endpoint, its usage and fallbacks are counted for the report.
    metrics = Metrics(CollectorRegistry()) if embedded.llm.base_url else None
    async with AsyncExitStack() as running:
        stack = await running.enter_async_context(EmbeddedStack(embedded))
        # Segmenter and consolidator share this process: the online path embeds first.
        opened = connect(stack.settings(), metrics, prioritise_online=True)
        container = await running.enter_async_context(opened)
        if config.reader == GOLD:
            container = gold_container(container, chosen)
        deployment = await open_deployment(container, None, running)
        todo = await missing_users(deployment, [c["user_id"] for c in chosen], out)
        console.print(f"{len(todo)} of {len(chosen)} conversations to ingest")
        events = (e for c in chosen if c["user_id"] in todo for e in session_events(c))
        seconds["ingest_s"] = round(await ingest_events(deployment, events, todo, out, console), 2)
        catalogue = (methods or _defaults(config))(container)
        outcomes = []
        with Progress(console=console) as progress:
            for method in catalogue:
                t0 = time.perf_counter()
                outcomes.append(await ask(method, chosen, progress))
                seconds[f"{method.name}_s"] = round(time.perf_counter() - t0, 2)
    seconds["total_s"] = round(time.perf_counter() - started, 2)
    meta = _meta(config, embedded, chosen, seconds)
    if metrics is not None:
        meta["run"]["llm_usage"] = llm_usage(metrics.registry)
    report = KnowledgeReport(outcomes, meta, _notes(config, embedded))
    write_report(report, out)
    return report


def session_events(conversation: Conversation) -> Iterator[dict[str, Any]]:
    """`turn_events`, each session closed by `session_end.v1` after its last turn, as a
    producer does (the SDK's `end_session`, LoCoMo's ingestion): a session is otherwise
    closed by idleness, measured in processing time (`domain/windows.py`), 30 minutes after a
    replay."""
    previous: dict[str, Any] | None = None
    for event in turn_events(conversation):
        if previous is not None and previous["session_id"] != event["session_id"]:
            yield _session_end(previous)
        yield event
        previous = event
    if previous is not None:
        yield _session_end(previous)


def _session_end(last_turn: dict[str, Any]) -> dict[str, Any]:
    keys = ("user_id", "session_id", "ts")
    return {"type": "session_end.v1", **{k: last_turn[k] for k in keys}}


def _defaults(config: KnowledgeConfig) -> MethodsFor:
    return lambda container: default_methods(container, baselines=config.baselines)


async def ask(
    method: KnowledgeMethod, conversations: Sequence[Conversation], progress: Progress
) -> MethodOutcome:
    """Every question to one method, each answer judged; a method that cannot run is not asked."""
    if method.answer is None:
        return MethodOutcome(method.name, method.kind, method.description, missing=method.missing)
    task = progress.add_task(method.name, total=sum(len(c["questions"]) for c in conversations))
    answers: dict[str, Sequence[Ranked]] = {}
    records: list[QuestionRecord] = []
    for conversation in conversations:
        for question in conversation["questions"]:
            ranked = answers[question["question_id"]] = await method.answer(conversation, question)
            items = [r.item for r in ranked]
            score = score_question(question_for_scoring(question), items)
            shown = [(r.source, r.item.text) for r in ranked]
            at = asked_at(conversation, question).isoformat()
            records.append(
                record(method.name, conversation["conversation_id"], question, at, shown, score)
            )
            progress.advance(task)
    shares = evaluate(list(conversations), lambda _, q: [r.item for r in answers[q["question_id"]]])
    return MethodOutcome(method.name, method.kind, method.description, shares, records)


def _clear(out: Path) -> None:
    """Remove what an earlier run left (only the files this harness writes)."""
    shutil.rmtree(out / STACK_DIR, ignore_errors=True)
    for name in (MARKER_FILE, EVENTS_FILE, RESULTS_JSON, RESULTS_MD):
        (out / name).unlink(missing_ok=True)


def _meta(
    config: KnowledgeConfig,
    settings: Settings,
    conversations: Sequence[Conversation],
    seconds: dict[str, float],
) -> dict[str, Any]:
    return {
        "dataset": {
            "data_dir": str(config.data_dir),
            **set_size(list(conversations)),
            "conversation_ids": [c["conversation_id"] for c in conversations],
            "max_questions_per_conversation": config.max_questions,
        },
        "run": {
            "seconds": seconds,
            "segment_by": settings.lifecycle.segment_by,
            "embedder": settings.embedding.backend,
            "memory_llm": "endpoint" if settings.llm.base_url else "offline",
            "llm_model": settings.llm.model if settings.llm.base_url else None,
            # What the model did (`MEMSTREAM_LLM_TASKS`); the rest was offline.
            "llm_tasks": list(settings.llm.named_tasks) if settings.llm.base_url else [],
            "fact_reader": config.reader,
            "machine": {
                "python": platform.python_version(),
                "cpus": len(os.sched_getaffinity(0)),
            },
        },
    }


def _notes(config: KnowledgeConfig, settings: Settings) -> list[str]:
    gold = [
        "Facts were read by the set's own annotations through the LLM backend's output path "
        "(--reader gold): a ceiling for the reading, not a result of memstream's."
    ]
    writer = (
        f"Memories and facts were written by the LLM backend ({settings.llm.model}), the "
        "offline rules standing in where it failed (run.llm_usage counts the fallbacks); "
        "recall planned and gated with it too."
        if settings.llm.base_url
        else "Memories were written by the offline (extractive, no-LLM) backend."
    )
    return (gold if config.reader == GOLD else []) + [
        "Questions about now are asked at the conversation's newest turn; past questions at "
        "their query_time.",
        "memstream's recall returns its facts first, then its memories; each carries its "
        "validity on the slots the question asks about (a memory stating none is scored on "
        "its text alone: past markers such as 'used to' still excuse a superseded value).",
        writer,
    ]
