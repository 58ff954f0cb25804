"""The LoCoMo evaluation, end to end: ingest, recall with every method, measure, report.

    report = await run_locomo(EvalConfig(data_dir=..., out_dir=...), Settings())

Everything a run keeps lives in `out_dir`: the embedded stack's data (`stack/`: Redis's
append-only file and the vector store's files), mem0's store (`mem0/`), the per-question
records (`records.jsonl`) and the outputs (`results.json`, `results.md`,
`recall_vs_tokens.png`). Running again with the same `out_dir` resumes: conversations the
stores already hold are not ingested again and questions already answered by a method with
the same configuration are not asked again. `resume=False` starts from nothing.
"""

from __future__ import annotations

import os
import platform
import shutil
import time
from collections.abc import Awaitable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memstream.bootstrap import connect
from memstream.entrypoints.embedded.stack import EmbeddedStack
from memstream.settings import Settings
from memstream_lab.eval.answer import Answerer
from memstream_lab.eval.baselines import FlatMethod, flat_methods, matched_methods
from memstream_lab.eval.context import (
    AnswerPool,
    RunContext,
    embed_queries,
    single_query_embed_ms,
)
from memstream_lab.eval.dataset import EvalConversation, load_split
from memstream_lab.eval.ingestion import (
    EVENTS_FILE,
    MARKER_FILE,
    Deployment,
    ingest,
    open_deployment,
    pending,
)
from memstream_lab.eval.mem0_peer import mem0_missing_reason
from memstream_lab.eval.methods import (
    FLAT_FINGERPRINT,
    MEM0_FINGERPRINT,
    MEM0_METHOD,
    run_flat,
    run_mem0,
    run_memstream,
)
from memstream_lab.eval.metrics import by_category, percentile
from memstream_lab.eval.records import RECORDS_FILE, Record, RecordLog
from memstream_lab.eval.report import MethodResult, Report, write_report
from memstream_lab.eval.variants import PRIMARY, Variant, curve_variants, select

STACK_DIR = "stack"
MEM0_DIR = "mem0"
# Questions whose single-query embedding time is measured for the report.
EMBED_TIMING_SAMPLE = 50


@dataclass(frozen=True)
class EvalConfig:
    data_dir: Path
    out_dir: Path
    conversations: int | None = None
    max_questions: int | None = None  # per conversation
    resume: bool = True
    variants: tuple[str, ...] | None = None  # None: every variant in the catalogue
    baselines: bool = True
    mem0: bool = True  # when the optional package is installed
    answer: bool = True  # when an LLM endpoint is configured
    answer_methods: tuple[str, ...] | None = None  # None: primary variant, hybrid@20, mem0
    memory_llm: bool = False  # let the write path and planner/gate use the endpoint too
    budgets: tuple[int, ...] = ()  # the token curve's ceilings (curve.py); none: no curve


async def run_locomo(
    config: EvalConfig, settings: Settings, console: Console | None = None
) -> Report:
    console = console or Console(stderr=True)
    started = time.perf_counter()
    out = config.out_dir.resolve()
    if not config.resume:
        _clear(out)
    out.mkdir(parents=True, exist_ok=True)
    split = load_split(
        config.data_dir, conversations=config.conversations, max_questions=config.max_questions
    )
    variants = select(list(config.variants) if config.variants is not None else None)
    variants += curve_variants(config.budgets)
    flats = flat_methods(config.budgets) if config.baselines else []
    mem0_reason = None if config.mem0 else "disabled for this run (--no-mem0)"
    mem0_reason = mem0_reason or mem0_missing_reason()
    answerer = _answerer(config, settings)
    answer_methods = frozenset(config.answer_methods or _default_answered(variants))
    timings: dict[str, float] = {}
    mem0_adds: list[float] = []
    async with AsyncExitStack() as running:
        embedded = stack_settings(out, settings, memory_llm=config.memory_llm)
        stack = await running.enter_async_context(EmbeddedStack(embedded))
        # Segmenter and consolidator share this process: the online path embeds first.
        opened = connect(stack.settings(), prioritise_online=True)
        container = await running.enter_async_context(opened)
        if answerer is not None:
            running.push_async_callback(answerer.close)
        deployments: dict[int | None, Deployment] = {}
        for size in _segment_sizes(variants):
            deployment = deployments[size] = await open_deployment(container, size, running)
            todo = await pending(deployment, split, out)
            console.print(
                f"{deployment.label}: {len(todo)} of {len(split)} conversations to ingest"
            )
            elapsed = await ingest(deployment, todo, out, console)
            timings[f"ingest_{deployment.label}_s"] = round(elapsed, 2)
        questions = [q.question for c in split for q in c.questions]
        vectors = await embed_queries(container.embedder, questions)
        embed_ms = await single_query_embed_ms(container.embedder, questions[:EMBED_TIMING_SAMPLE])
        with RecordLog(out, resume=config.resume) as log, _progress(console) as progress:
            pool = AnswerPool(answerer, log) if answerer is not None else None
            ctx = RunContext(split, log, progress, vectors, pool, answer_methods)
            if flats:
                timings["flat_s"] = await _timed(run_flat(ctx, container, flats))
            for variant in variants:
                deployment = deployments[variant.segment_messages]
                work = run_memstream(ctx, deployment, variant)
                timings[variant.method + "_s"] = await _timed(work)
            if flats and config.budgets:
                # The flat baselines again, each filled to what memstream spent at a budget.
                matched = matched_methods(_spent(ctx, split, variants))
                timings["flat_matched_s"] = await _timed(run_flat(ctx, container, matched))
                flats += matched
            if mem0_reason is None:
                t0 = time.perf_counter()
                try:
                    mem0_adds = await run_mem0(ctx, out / MEM0_DIR)
                except Exception as exc:
                    # A peer's failure must not cost the run its other results.
                    mem0_reason = f"mem0 failed: {type(exc).__name__}: {exc}"
                    console.print(f"[yellow]{mem0_reason}")
                timings["mem0_s"] = round(time.perf_counter() - t0, 2)
            if pool is not None:
                await pool.drain()
                if pool.failures:
                    console.print(f"[yellow]{pool.failures} answers failed; rerun to retry them")
            results = _results(ctx, split, variants, flats, include_mem0=mem0_reason is None)
    timings["total_s"] = round(time.perf_counter() - started, 2)
    report = Report(
        results,
        meta=_meta(config, settings, split, timings, embed_ms, mem0_adds, mem0_reason, answerer),
        notes=_notes(embed_ms, mem0_reason, answerer is not None, config.memory_llm)
        + _curve_notes(config.budgets),
    )
    write_report(report, out)
    return report


_FLAT_DESCRIPTIONS = {
    "dense": "raw messages, cosine of MiniLM embeddings",
    "bm25": "raw messages, Okapi BM25 (k1 1.2, b 0.75, IDF of the conversation)",
    "hybrid": "raw messages, 0.9 x dense + 0.1 x s/(s+5) of BM25 (memstream's fusion)",
}


def _segment_sizes(variants: Sequence[Variant]) -> list[int | None]:
    """The write paths the variants need, the deployed one (by exchange, None) first; flat
    baselines and mem0 read the raw messages and need no ingest."""
    return sorted({v.segment_messages for v in variants}, key=lambda n: (n is not None, n or 0))


def _clear(out: Path) -> None:
    """Remove what an earlier run left (only the files this harness writes)."""
    for name in (STACK_DIR, MEM0_DIR):
        shutil.rmtree(out / name, ignore_errors=True)
    for name in (RECORDS_FILE, MARKER_FILE, EVENTS_FILE):
        (out / name).unlink(missing_ok=True)


def stack_settings(out_dir: Path, settings: Settings, *, memory_llm: bool = False) -> Settings:
    """The embedded stack of a run kept in `out_dir`; the LLM endpoint only if `memory_llm`.
    The knowledge write is on, whatever the environment says: the entity variants read it."""
    # The replayed history is years old: the clock may close every window at once, and
    # should check often so the last day, week and month close soon after the replay.
    return settings.model_copy(
        update={
            "data_dir": out_dir.resolve() / STACK_DIR,
            "clock_interval_s": 0.5,
            "clock_grace_s": 0.0,
            "llm_base_url": settings.llm.base_url if memory_llm else "",
            "knowledge": True,
        }
    )


def _answerer(config: EvalConfig, settings: Settings) -> Answerer | None:
    if not (config.answer and settings.llm.base_url):
        return None
    return Answerer.from_settings(settings)


def _default_answered(variants: Sequence[Variant]) -> list[str]:
    primary = [v.method for v in variants if v.name == PRIMARY] or [v.method for v in variants[:1]]
    return [*primary, "flat-hybrid@20", MEM0_METHOD]


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


async def _timed(work: Awaitable[object]) -> float:
    t0 = time.perf_counter()
    await work
    return round(time.perf_counter() - t0, 2)


def _results(
    ctx: RunContext,
    split: Sequence[EvalConversation],
    variants: Sequence[Variant],
    flats: Sequence[FlatMethod],
    *,
    include_mem0: bool,
) -> list[MethodResult]:
    """Summaries over this run's questions only (the log may hold others from earlier runs)."""
    asked = {(q.sample, q.index) for c in split for q in c.questions}

    def records(method: str, fingerprint: str) -> list[Record]:
        return [r for r in ctx.log.records(method, fingerprint) if (r.sample, r.index) in asked]

    def summaries(method: str, fingerprint: str) -> dict[str, Any] | None:
        found = records(method, fingerprint)
        return by_category([r.outcome() for r in found]) if found else None

    out: list[MethodResult] = []
    for v in variants:
        if not (logged := records(v.method, v.fingerprint)):
            continue
        per_category = by_category([r.outcome() for r in logged])
        coverages = {(r.sample, r.index): r.coverage for r in logged if r.coverage is not None}
        primary = v.name == PRIMARY
        out.append(
            MethodResult(
                v.method,
                "memstream",
                v.description,
                per_category,
                v.fingerprint,
                primary,
                coverages,
                budget=v.budget,
            )
        )
    for f in flats:
        if found := summaries(f.name, FLAT_FINGERPRINT):
            described = _FLAT_DESCRIPTIONS[f.kind]
            if f.max_tokens is not None:
                described += f", its best messages within {f.max_tokens} tokens"
            if f.matching is not None:
                described += f" (what memstream spent at max_tokens {f.matching})"
            budget, matched = (f.matching, True) if f.matching else (f.max_tokens, False)
            out.append(
                MethodResult(
                    f.name,
                    "flat",
                    described,
                    found,
                    FLAT_FINGERPRINT,
                    budget=budget,
                    matched=matched,
                )
            )
    if include_mem0 and (found := summaries(MEM0_METHOD, MEM0_FINGERPRINT)):
        description = "mem0 OSS Memory, raw messages (infer=False), same embedder, top 20"
        out.append(MethodResult(MEM0_METHOD, "mem0", description, found, MEM0_FINGERPRINT))
    return out


def _meta(
    config: EvalConfig,
    settings: Settings,
    split: Sequence[EvalConversation],
    timings: dict[str, float],
    embed_ms: float,
    mem0_adds: list[float],
    mem0_reason: str | None,
    answerer: Answerer | None,
) -> dict[str, Any]:
    return {
        "dataset": {
            "data_dir": str(config.data_dir),
            "conversations": [c.sample for c in split],
            "questions": sum(len(c.questions) for c in split),
            "max_questions_per_conversation": config.max_questions,
        },
        "run": {
            "seconds": timings,
            "query_embedding_p50_ms": round(embed_ms, 2),
            "segment_by": settings.lifecycle.segment_by,
            "embedder": settings.embedding.backend,
            "memory_llm": "endpoint" if config.memory_llm and settings.llm.base_url else "offline",
            "machine": {
                "python": platform.python_version(),
                "cpus": len(os.sched_getaffinity(0)),
            },
        },
        "answering": {
            "enabled": answerer is not None,
            "model": settings.llm.model if answerer is not None else None,
        },
        "mem0": {
            "run": mem0_reason is None,
            "reason_not_run": mem0_reason,
            "messages_added": len(mem0_adds),
            "add_latency_p50_ms": round(percentile(mem0_adds, 50), 2) if mem0_adds else None,
            "add_latency_p95_ms": round(percentile(mem0_adds, 95), 2) if mem0_adds else None,
        },
    }


def _spent(
    ctx: RunContext, split: Sequence[EvalConversation], variants: Sequence[Variant]
) -> dict[int, int]:
    """The mean tokens a query memstream spent at each curve budget, over this run's
    questions."""
    asked = {(q.sample, q.index) for c in split for q in c.questions}
    spent: dict[int, int] = {}
    for v in variants:
        if v.budget is None:
            continue
        logged = ctx.log.records(v.method, v.fingerprint)
        found = [r.tokens for r in logged if (r.sample, r.index) in asked]
        if found:
            spent[v.budget] = round(sum(found) / len(found))
    return spent


def _curve_notes(budgets: Sequence[int]) -> list[str]:
    if not budgets:
        return []
    return [
        "Token curve at " + ", ".join(str(b) for b in budgets) + " tokens: memstream's "
        f"`{PRIMARY}` with max_tokens at each (a ceiling: up to the default one, a question "
        "after one fact spends a share of it; above it, every question spends it, with its "
        "counts grown in proportion), each flat baseline filled with its best dated messages "
        "up to it, and again up to the tokens memstream spent there; measured, not "
        "interpolated."
    ]


def _notes(embed_ms: float, mem0_reason: str | None, answered: bool, memory_llm: bool) -> list[str]:
    notes = [
        "Evidence recall counts a message as recalled when its id is in the source_ids of a "
        "recalled L1 memory (memstream) or is a returned message (flat, mem0); evidence ids "
        "naming no message of the conversation are left out.",
        "Tokens count every recalled memory of every level with memstream's count_tokens.",
        "Flat baselines return each message dated as memstream dates a leaf ('8 May 2023, "
        "Speaker: text'): the date counts in their tokens and their answer coverage; they "
        "search the undated messages.",
        "Latency is the retrieval call alone: every method gets the same query vectors, "
        f"embedded once beforehand (one query alone embeds in {embed_ms:.1f} ms, p50), except "
        "mem0, which embeds inside its search. Flat baselines are in-process numpy.",
        "flat-hybrid = 0.9 * dense + 0.1 * s/(s+5) with s the BM25 score: memstream's own "
        "saturation of the lexical score (not max-normalisation).",
    ]
    notes.append(
        "Answer accuracy: LLM answers from the recalled memories, judged CORRECT/WRONG by the "
        "same LLM (TiMem appendix E.1 protocol)."
        if answered
        else "Answer accuracy not measured: no LLM endpoint configured (MEMSTREAM_LLM_BASE_URL)."
    )
    if not memory_llm:
        notes.append("Memories were written by the offline (extractive, no-LLM) backend.")
    if mem0_reason is not None:
        notes.append(f"mem0 not run: {mem0_reason}.")
    else:
        notes.append(
            "mem0 runs without its optional fastembed/spaCy extras, so its search is dense only."
        )
    return notes
